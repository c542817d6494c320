/** CommandRecord inputs: each step's script and output become artifacts of the record. */
import { z } from "zod";
import { each, nonEmpty, oneOf, stackName } from "../input-rules";

const isText = (v: unknown) => typeof v === "string";

export const commandRecordInputs = z.object({
  stack: stackName(),
  kind: oneOf("kind", ["install", "router"]),
  hostAlias: nonEmpty("hostAlias"),
  steps: z
    .unknown()
    .refine((v) => Array.isArray(v) && v.length > 0, { error: "steps must be a list of at least one step" })
    .superRefine(
      each((step) =>
        z.object({
          name: z.unknown().refine((n) => typeof n === "string" && /^[a-z][a-z0-9-]*$/.test(n), { error: `steps[].name must be a lowercase word (it names the step's artifacts), got ${JSON.stringify(step.name)}` }),
          script: z.unknown().refine(isText, { error: `steps[${JSON.stringify(step.name)}].script must be text` }),
          stdout: z.unknown().refine(isText, { error: `steps[${JSON.stringify(step.name)}].stdout must be text` }),
        }),
      ),
    ),
  observations: z.unknown().refine((v) => typeof v === "object" && v !== null && !Array.isArray(v), { error: "observations must be a map of what the steps established" }),
});
