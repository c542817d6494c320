/** Input checks of Gate C's providers as zod schemas: each issue names its property, and values unknown during preview are let through by the helper. */
import { z } from "zod";
import { processIdentityProblem } from "../../lib/engine/generation";
import { httpBaseUrl, nonEmpty, positiveSeconds } from "../input-rules";

/** A process identity, judged by the same rule the proof applies (lib/engine/generation.ts). */
export const processIdentitySchema = z.unknown().superRefine((id, ctx) => {
  const problem = processIdentityProblem(id);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

/** EngineGeneration inputs, in the order their failures are reported. */
export const generationInputs = z.object({
  engineId: nonEmpty("engineId"),
  hostAlias: nonEmpty("hostAlias"),
  planSha256: nonEmpty("planSha256"),
  expectedVersion: nonEmpty("expectedVersion"),
  servedName: nonEmpty("servedName"),
  url: httpBaseUrl("url", "the engine's"),
  processIdentity: processIdentitySchema,
  probeTimeoutS: positiveSeconds("probeTimeoutS"),
  apiKey: z.string({ error: "apiKey must be a string" }).optional(),
});
