/**
 * The one error Gate E's logic throws; `code` says which check failed.
 *
 * - `NARWHAL_ATTESTATION_INPUT`: the facts an attestation document is built from are incomplete or
 *   contradict each other (no cache rank, a disabled handshake check, an unknown connector).
 * - `NARWHAL_ATTESTATION_SIDECAR`: the sidecar could not be read (no answer, not 200, not JSON).
 * - `NARWHAL_ATTESTATION_ENGINE_CHANGED`: the sidecar answers 503 because the engine process it bound
 *   at start is no longer the live one.
 * - `NARWHAL_ATTESTATION_MISMATCH`: the sidecar's attestation does not bind the engine generation,
 *   plan, cache layout or document it must.
 * - `NARWHAL_CONTRACT_MISMATCH`: the engines' attested contracts differ (finalize-fleet's refusal).
 * - `NARWHAL_JSON`: a document is not JSON, or holds a value Python's `json.dumps` would write differently.
 */
export type AttestationErrorCode =
  | "NARWHAL_ATTESTATION_INPUT"
  | "NARWHAL_ATTESTATION_SIDECAR"
  | "NARWHAL_ATTESTATION_ENGINE_CHANGED"
  | "NARWHAL_ATTESTATION_MISMATCH"
  | "NARWHAL_CONTRACT_MISMATCH"
  | "NARWHAL_JSON";

/** Callers and tests match on `code`, not `instanceof` (each serialized provider carries its own lib/). */
export class AttestationError extends Error {
  constructor(
    readonly code: AttestationErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "AttestationError";
  }
}
