/**
 * The one error Gate C's live proof and cache capture throw; `code` says which check failed.
 *
 * - `NARWHAL_ENGINE_HTTP`: a probe could not be sent, or no answer came within its timeout.
 * - `NARWHAL_ENGINE_NOT_HEALTHY`: `/health` did not answer 200 within the bounded wait.
 * - `NARWHAL_ENGINE_UNAUTHORIZED`: the engine refused the API key (401).
 * - `NARWHAL_ENGINE_RESPONSE`: an endpoint answered with a status or body the runbook's probe rejects.
 * - `NARWHAL_ENGINE_VERSION`: `/version` differs from the checked image's `vllm_api_version`.
 * - `NARWHAL_ENGINE_MODEL`: the served model name is not in `/v1/models`.
 * - `NARWHAL_ENGINE_PROCESS_START`: `/metrics` has no `process_start_time_seconds` (no process identity).
 * - `NARWHAL_ENGINE_COMPLETION`: the deterministic completion came back without text.
 * - `NARWHAL_ENGINE_RESTARTED`: the live process is not the one that was proved.
 * - `NARWHAL_METRICS_PARSE`: `/metrics` is not the Prometheus text format.
 * - `NARWHAL_CACHE_LAYOUT_SOURCE`: the cache detail could not be read from `/metrics` or config.json.
 * - `NARWHAL_CACHE_LOG`: the engine's log could not be read, or lacks a line the capture needs.
 * - `NARWHAL_CACHE_LOG_ROTATED`: the log is not the serving start's whole log (rotated, truncated, or
 *   written by another start); nothing is guessed from it.
 * - `NARWHAL_CACHE_LAYOUT_MISMATCH`: the live cache layout disagrees with the plan, with the engine's
 *   own cache config, or across TP ranks, or a rank is missing.
 */
export type EngineErrorCode =
  | "NARWHAL_ENGINE_HTTP"
  | "NARWHAL_ENGINE_NOT_HEALTHY"
  | "NARWHAL_ENGINE_UNAUTHORIZED"
  | "NARWHAL_ENGINE_RESPONSE"
  | "NARWHAL_ENGINE_VERSION"
  | "NARWHAL_ENGINE_MODEL"
  | "NARWHAL_ENGINE_PROCESS_START"
  | "NARWHAL_ENGINE_COMPLETION"
  | "NARWHAL_ENGINE_RESTARTED"
  | "NARWHAL_METRICS_PARSE"
  | "NARWHAL_CACHE_LAYOUT_SOURCE"
  | "NARWHAL_CACHE_LOG"
  | "NARWHAL_CACHE_LOG_ROTATED"
  | "NARWHAL_CACHE_LAYOUT_MISMATCH";

/**
 * Callers and tests match on `code`, not `instanceof`: each serialized dynamic provider may carry its
 * own copy of lib/. Messages name the engine, its host and the URL, never the API key.
 */
export class EngineError extends Error {
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    /** The cause alone, without the engine and URL (e.g. "connection refused (ECONNREFUSED)"). */
    readonly reason?: string,
  ) {
    super(message);
    this.name = "EngineError";
  }
}
