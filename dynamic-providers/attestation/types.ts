import type { EngineContract } from "../../lib/attestation/contract";
import type { ServedDocument } from "../../lib/attestation/document";
import type { ProcessIdentity } from "../../lib/engine/generation";

/** What one engine's attestation is checked against, and where its sidecar answers (plain inside provider calls). */
export interface AttestationInputs {
  engineId: string;
  hostAlias: string;
  /** The sidecar's `/v1/attestation` URL (the fleet document's `attestation_url`). */
  url: string;
  /** The document the sidecar was started with, and its canonical digest. */
  document: ServedDocument;
  documentDigest: string;
  /**
   * Set when the document is an adopted runbook engine's own (`<run>/engine-attestation.json`, see
   * lib/attestation/runbook-document.ts): its `launch` is the launcher's record, so the generation is
   * bound through the engine identity the sidecar attests, not through the launch fields.
   */
  runbookDocument?: { run: string; reason: string };
  /** The proved generation (EngineGeneration): the sidecar must attest exactly this process. */
  generationDigest: string;
  processStartTime: number;
  version: string;
  /** The runtime the generation was proved with: `/v1/process` must answer for it. */
  processIdentity: ProcessIdentity;
  planSha256: string;
  cacheLayoutDigest: string;
  /** The sidecar process its remote command started: a restarted sidecar is a new attestation. */
  sidecar: { pid: number; startedAt: string };
  /** The sidecar command's trigger digest (components/runtime/start-key.ts): while it stands, a preview holds `sidecar`. */
  sidecarStartKey?: string;
  /** Bounded wait for the sidecar's `/health`, and the timeout of each request. */
  probeTimeoutS: number;
  /** When set, the attestation is written to runs/<stack>/evidence as an immutable record. */
  stack?: string;
}

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
export type AttestationState = "attested" | "engine-changed" | "changed" | "unreachable" | "unreadable";

export interface AttestationObservation {
  /** The live attestation digest, or "none". */
  observedAttestation?: string;
  observedState?: AttestationState;
  observedDetail?: string;
}

export type AttestationOutputs = AttestationInputs & AttestationRecord & AttestationObservation;
