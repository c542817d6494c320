/**
 * The one error profiling throws; `code` says which stop condition or rule fired. Messages follow the
 * narwhal-profile contract's wording, with this program's setting names in place of its flags.
 *
 * - `NARWHAL_PROFILE_SELECTION`: a selection matched zero configured engines.
 * - `NARWHAL_PROFILE_SWEEP`: sweep settings break the contract's minimums (before anything is measured).
 * - `NARWHAL_PROFILE_UNHEALTHY`: `/health` did not answer 200.
 * - `NARWHAL_PROFILE_MAX_MODEL_LEN`: `/tokenize` gave no valid `max_model_len`.
 * - `NARWHAL_PROFILE_POINTS`: the engine's limits leave too few prefill lengths, decode input lengths or
 *   decode concurrency levels.
 * - `NARWHAL_PROFILE_OVERFLOW`: a tokenised input plus its requested output would not fit the engine.
 * - `NARWHAL_PROFILE_PREFILL_FIT`: the representative prefill fit is above 20% mean or 50% worst-point error.
 * - `NARWHAL_PROFILE_PROBE`: a probe answered with something the profiler cannot use.
 * - `NARWHAL_PROFILE_COLD`: the prefix cache served prompt tokens during a cold sweep.
 * - `NARWHAL_PROFILE_GENERATION`: the engine process changed while it was being profiled.
 * - `NARWHAL_PROFILE_STORE`: a store, sidecar or row breaks the store contract, or an output is refused.
 * - `NARWHAL_PROFILE_FIT`: samples are degenerate (an axis cannot be identified).
 * - `NARWHAL_ENGINE_GONE`: the engine's process went away mid-sweep (lib/engine/gone.ts); kept as that.
 * - `NARWHAL_PROFILE_LIMIT`: every try's decode evidence broke Narwhal's profile-validation limits
 *   (the preflight's `profile` gate would reject it).
 */
export type ProfileErrorCode =
  | "NARWHAL_PROFILE_SELECTION"
  | "NARWHAL_PROFILE_SWEEP"
  | "NARWHAL_PROFILE_UNHEALTHY"
  | "NARWHAL_PROFILE_MAX_MODEL_LEN"
  | "NARWHAL_PROFILE_POINTS"
  | "NARWHAL_PROFILE_OVERFLOW"
  | "NARWHAL_PROFILE_PREFILL_FIT"
  | "NARWHAL_PROFILE_PROBE"
  | "NARWHAL_PROFILE_COLD"
  | "NARWHAL_PROFILE_GENERATION"
  | "NARWHAL_PROFILE_STORE"
  | "NARWHAL_PROFILE_FIT"
  | "NARWHAL_PROFILE_LIMIT"
  | "NARWHAL_ENGINE_GONE";

export class ProfileError extends Error {
  constructor(
    readonly code: ProfileErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ProfileError";
  }
}
