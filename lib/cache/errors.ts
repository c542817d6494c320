/**
 * The one error Gate C's cache grouping throws; `code` says which check failed.
 *
 * - `NARWHAL_CACHE_SIGNATURE_INPUT`: a cache-signature input is missing or of the wrong kind.
 * - `NARWHAL_CACHE_GROUP_ENGINES`: the engine list cannot be grouped (duplicate id or index).
 * - `NARWHAL_CACHE_LAYOUT_MISSING`: an engine of a group has no captured cache layout, so its layout and
 *   page geometry cannot be compared with its group's representative.
 */
export type CacheGroupErrorCode = "NARWHAL_CACHE_SIGNATURE_INPUT" | "NARWHAL_CACHE_GROUP_ENGINES" | "NARWHAL_CACHE_LAYOUT_MISSING";

/** Callers and tests match on `code`, not `instanceof` (each serialized provider carries its own lib/). */
export class CacheGroupError extends Error {
  constructor(
    readonly code: CacheGroupErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "CacheGroupError";
  }
}
