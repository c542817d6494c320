/** What one engine's attestation is checked against and where its sidecar answers: the inputs' schema, their type and the outputs. */
import { z } from "zod";
import type { EngineContract } from "../../lib/attestation/contract";
import type { ServedDocument } from "../../lib/attestation/document";
import { aboveZero, digest, given, got, matching, seconds, text, whole } from "../../lib/provider-fields";
import { processIdentitySchema } from "../engine-generation/schema";
import { fieldsOf } from "../../lib/input-rules";

/** The inputs as the check judges them, in the order their failures are reported; values unknown until apply are judged on the up. */
export const attestationInputs = z.object({
  engineId: text("engineId"),
  hostAlias: text("hostAlias"),
  version: text("version"),
  /** The canonical digest of the document the sidecar was started with. */
  documentDigest: digest("documentDigest"),
  /** The proved generation (EngineGeneration): the sidecar must attest exactly this process. */
  generationDigest: digest("generationDigest"),
  planSha256: digest("planSha256"),
  cacheLayoutDigest: digest("cacheLayoutDigest"),
  /** The sidecar's `/v1/attestation` URL (the fleet document's `attestation_url`). */
  url: matching(/^http:\/\/[^/\s]+\/v1\/attestation$/, got("url", "must be the sidecar's http://<address>:<port>/v1/attestation")),
  /** The runtime the generation was proved with: `/v1/process` must answer for it. */
  processIdentity: processIdentitySchema,
  /** Bounded wait for the sidecar's `/health`, and the timeout of each request. */
  probeTimeoutS: seconds("probeTimeoutS"),
  processStartTime: aboveZero(got("processStartTime", "must be a positive number")),
  /** The sidecar process its remote command started: a restarted sidecar is a new attestation. */
  sidecar: z.preprocess(fieldsOf, z.object({ pid: whole(1, Number.MAX_SAFE_INTEGER, got("sidecar.pid", "must be a positive integer")), startedAt: given<string>() })),
  document: given<ServedDocument>(),
  /**
   * Set when the document is an adopted runbook engine's own (`<run>/engine-attestation.json`, see
   * lib/attestation/runbook-document.ts): its `launch` is the launcher's record, so the generation is
   * bound through the engine identity the sidecar attests, not through the launch fields.
   */
  runbookDocument: given<{ run: string; reason: string }>().optional(),
  /** The sidecar command's trigger digest (components/runtime/start-key.ts): while it stands, a preview holds `sidecar`. */
  sidecarStartKey: given<string>().optional(),
  /** When set, the attestation is written to runs/<stack>/evidence as an immutable record. */
  stack: given<string>().optional(),
});

export type AttestationInputs = z.infer<typeof attestationInputs>;

/** What create recorded: the sidecar's answer as it was checked. */
export interface AttestationRecord {
  /** The sidecar's `attestation_digest` (checked against its answer): what profiles and preflight bind. */
  attestationDigest: string;
  launchDigest: string;
  /** The contract the sidecar attests; the fleet's `engine_contract` is built from every engine's. */
  contract: EngineContract;
  contractFingerprint: string;
  /** `/v1/process`: the start time the sidecar measures for the engine's pid or container. */
  processClock: number;
  attestedAt: string;
  evidence?: { relativePath: string; digest: string };
}

/**
 * Set by `read` (refresh): what the sidecar answers now. `attested`: the recorded attestation;
 * `engine-changed`: 503, the engine process it bound is gone; `changed`: another attestation;
 * `unreachable`: no answer; `unreadable`: an answer that is not an attestation.
 */
export interface AttestationObservation {
  /** The live attestation digest, or "none". */
  observedAttestation?: string;
  observedState?: "attested" | "engine-changed" | "changed" | "unreachable" | "unreadable";
  observedDetail?: string;
}

export type AttestationOutputs = AttestationInputs & AttestationRecord & AttestationObservation;
