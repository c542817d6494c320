/** EngineGeneration's inputs as one zod schema (each issue names its property), the types it produces, and the outputs. */
import { z } from "zod";
import { processIdentityProblem, type ObservedState, type ProcessIdentity } from "../../lib/engine/generation";
import { httpBaseUrl, seconds, text } from "../../lib/provider-fields";

/** A process identity, judged by the same rule the proof applies (lib/engine/generation.ts). */
export const processIdentitySchema = z.custom<ProcessIdentity>().superRefine((id, ctx) => {
  const problem = processIdentityProblem(id);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

/** What the live proof is taken against, plus how to reach the engine (plain inside provider calls). */
const fields = z.object({
  engineId: text("engineId"),
  hostAlias: text("hostAlias"),
  /** The launch plan this process runs. */
  planSha256: text("planSha256"),
  /** `vllm_api_version` from the image check: `/version` must equal it. */
  expectedVersion: text("expectedVersion"),
  /** `--served-model-name`: `/v1/models` must list it; the completion asks for it. */
  servedName: text("servedName"),
  /** Base URL of the engine's OpenAI server (the launch plan's endpoint). */
  url: httpBaseUrl("url", "the engine's"),
  /** The runtime the engine was started as: {hostAlias, pid} (native) or {hostAlias, containerId} (container). */
  processIdentity: processIdentitySchema,
  /** Bounded wait for `/health` before the proof. */
  probeTimeoutS: seconds("probeTimeoutS"),
  /** Secret: sent as `Authorization: Bearer`; changing it alone updates in place. */
  apiKey: z.string({ error: "apiKey must be a string" }).optional(),
  /** The start command's trigger digest (components/runtime/start-key.ts): while it stands, a preview holds `processIdentity`. */
  processStartKey: z.string().optional(),
  /** When set, the capture is also written to runs/<stack>/evidence as an immutable record. */
  stack: z.string().optional(),
  /**
   * Set when the process is an engine the runbook's launcher started and the program adopted instead of
   * restarting (components/runtime/native.ts): the launch directory and the launcher's plan hash.
   */
  adopted: z.object({ launcher: z.literal("runbook"), run: z.string(), planSha256: z.string().nullable() }).optional(),
  /**
   * With `runtime.restartKvPeers`: the other engines of its KV component. This process holds NIXL
   * handshakes of theirs, so one of them starting anew (another identity here, or another live start on
   * refresh) replaces this proof (replace key "peers"); a peer joining or leaving only updates it. A peer's
   * `processStartKey` lets a preview hold its identity while its start only runs again.
   */
  peers: z.record(z.string(), z.object({ url: z.string(), processIdentity: z.custom<ProcessIdentity>(), processStartKey: z.string().optional() })).optional(),
});
export type EngineGenerationInputs = z.infer<typeof fields>;

/** The inputs the check judges, in the order their failures are reported; the rest are typed only. */
export const generationInputs = fields.pick({
  engineId: true, hostAlias: true, planSha256: true, expectedVersion: true, servedName: true, url: true, processIdentity: true, probeTimeoutS: true, apiKey: true,
});

/** The capture, written by create and never overwritten. */
export interface EngineGenerationCapture {
  /** sha256 over {processStartTime, pid or containerId, version, planSha256}. */
  generationDigest: string;
  /** `process_start_time_seconds` of the proved process. */
  processStartTime: number;
  /** What `/version` returned (equal to expectedVersion). */
  version: string;
  provedAt: string;
  /** The 32-token temperature-0 completion of "The sea is". */
  completionText: string;
  /** The evidence record of this proof, when a stack was given. */
  evidence?: { relativePath: string; digest: string };
  /** With peers: each peer's `process_start_time_seconds` when this proof was taken (or last updated). */
  peerStarts?: Record<string, number>;
}

/** Set by `read` (refresh): what the live endpoint is now. Absent until the first refresh. */
export interface EngineGenerationObservation {
  /** Equals generationDigest while the proved process serves; otherwise the live digest or "none". */
  observedGeneration?: string;
  observedState?: ObservedState;
  observedDetail?: string;
  /** With peers: each peer's live start (`null`: no answer). */
  observedPeerStarts?: Record<string, number | null>;
}

export type EngineGenerationOutputs = EngineGenerationInputs & EngineGenerationCapture & EngineGenerationObservation;
