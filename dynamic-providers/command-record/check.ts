/** CommandRecord inputs: each step's script and output become artifacts of the record. */
import { z } from "zod";
import { each } from "../../lib/input-rules";
import { oneOf, stackName, text } from "../../lib/provider-fields";
import type { EvidenceRef } from "../../lib/evidence/provider-evidence";

const isText = (v: unknown) => typeof v === "string";

/** One `@pulumi/command` step as it ran on the host: the script's text and what it printed. */
export interface RecordedStep {
  name: string;
  script: string;
  stdout: string;
}

export const commandRecordInputs = z.object({
  stack: stackName(),
  /** The record kind: `install` (Gate B) or `router` (Gate G). */
  kind: oneOf("kind", ["install", "router"]),
  /** The host the steps ran on. */
  hostAlias: text("hostAlias"),
  // Judged step by step, so a refusal names the step rather than its place in the list.
  steps: z
    .custom<RecordedStep[]>()
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
  /** What the steps established (the install marker, the router's start and proof). */
  observations: z.record(z.string(), z.unknown(), { error: "observations must be a map of what the steps established" }),
  /**
   * For steps whose commands only run again while their triggers stand, and then print what they printed
   * before (the install adopts its venv): the digest of those triggers (components/runtime/start-key.ts).
   * While it stands, a preview holds `steps` and `observations`.
   */
  startKey: z.string({ error: "startKey must be the digest of the steps' triggers" }).optional(),
});

export type CommandRecordInputs = z.infer<typeof commandRecordInputs>;

export interface CommandRecordOutputs extends CommandRecordInputs {
  recordedAt: string;
  evidence: EvidenceRef;
}
