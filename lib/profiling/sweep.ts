/**
 * narwhal-profile's sweep: defaults, validation before anything is measured, and the bounds one engine's
 * live `max_model_len` and its `max_num_seqs` limit put on it (narwhal's `bounded_sweep`, rule for rule).
 */
import { ProfileError } from "./errors";

export interface Sweep {
  readonly prefillLens: readonly number[];
  readonly decodeInputLens: readonly number[];
  readonly decodeConcurrency: readonly number[];
  readonly decodeTokens: number;
  readonly prefillRepeats: number;
  readonly decodeRepeats: number;
}

/** The contract's option defaults. */
export const DEFAULT_SWEEP: Sweep = Object.freeze({
  prefillLens: Object.freeze([256, 512, 1024, 2048, 4096, 8192, 12288, 16384]),
  decodeInputLens: Object.freeze([512, 4096, 8192]),
  decodeConcurrency: Object.freeze([1, 4, 16, 48]),
  decodeTokens: 64,
  prefillRepeats: 3,
  decodeRepeats: 1,
});

/** Output tokens a prefill probe asks for: its latency is the time to the first token. */
export const PREFILL_OUTPUT_TOKENS = 1;

const distinct = (xs: readonly number[]) => new Set(xs).size;

/** Every rule narwhal-profile checks before selecting a mode; the message names the setting. */
export function sweepProblems(s: Sweep): string[] {
  const problems: string[] = [];
  const ints = (name: string, xs: readonly number[], min: number) => {
    if (!Array.isArray(xs) || xs.some((x) => !Number.isInteger(x) || x < min)) problems.push(`profiling.${name} must be integers of at least ${min}, got ${JSON.stringify(xs)}`);
  };
  ints("prefillLens", s.prefillLens, 1);
  ints("decodeInputLens", s.decodeInputLens, 1);
  ints("decodeConcurrency", s.decodeConcurrency, 1);
  if (distinct(s.prefillLens) < 3) problems.push("the sweep needs at least three distinct prefill lengths (profiling.prefillLens)");
  if (distinct(s.decodeInputLens) < 2 || distinct(s.decodeConcurrency) < 2) {
    problems.push("the decode fit needs two distinct input lengths and two distinct concurrency steps (profiling.decodeInputLens, profiling.decodeConcurrency)");
  }
  if (!Number.isInteger(s.decodeTokens) || s.decodeTokens < 3) problems.push(`profiling.decodeTokens needs at least 3 (two intervals need three tokens), got ${s.decodeTokens}`);
  if (!Number.isInteger(s.prefillRepeats) || s.prefillRepeats < 3) problems.push(`profiling.prefillRepeats needs at least 3 for a repeat median, got ${s.prefillRepeats}`);
  if (!Number.isInteger(s.decodeRepeats) || s.decodeRepeats < 1) problems.push(`profiling.decodeRepeats needs at least 1, got ${s.decodeRepeats}`);
  return problems;
}

export function validateSweep(s: Sweep): Sweep {
  const problems = sweepProblems(s);
  if (problems.length) throw new ProfileError("NARWHAL_PROFILE_SWEEP", problems.join("; "));
  return s;
}

/**
 * Keeps the points one engine can serve: a prefill length leaves one output token, a decode input length
 * leaves `decodeTokens`; with a limit, concurrency points above it are dropped and the limit itself is
 * added when a candidate exceeded it. Too few points left is a stop condition.
 */
export function boundedSweep(s: Sweep, maxModelLen: number, maxNumSeqs?: number): Sweep {
  const prefillLens = s.prefillLens.filter((n) => n + PREFILL_OUTPUT_TOKENS < maxModelLen);
  const decodeInputLens = s.decodeInputLens.filter((n) => n + s.decodeTokens < maxModelLen);
  if (distinct(prefillLens) < 3 || distinct(decodeInputLens) < 2) {
    throw new ProfileError(
      "NARWHAL_PROFILE_POINTS",
      `max_model_len ${maxModelLen} leaves too few sweep points; choose shorter --prefill-lens and --decode-input-lens (profiling.prefillLens, profiling.decodeInputLens)`,
    );
  }
  let decodeConcurrency = [...s.decodeConcurrency];
  if (maxNumSeqs !== undefined) {
    decodeConcurrency = decodeConcurrency.filter((n) => n <= maxNumSeqs);
    if (maxNumSeqs < Math.max(...s.decodeConcurrency) && !decodeConcurrency.includes(maxNumSeqs)) decodeConcurrency.push(maxNumSeqs);
    if (distinct(decodeConcurrency) < 2) {
      throw new ProfileError(
        "NARWHAL_PROFILE_POINTS",
        `max_num_seqs ${maxNumSeqs} leaves fewer than two decode concurrency points; adjust the engine launch policy before profiling`,
      );
    }
  }
  return { ...s, prefillLens, decodeInputLens, decodeConcurrency };
}

/** narwhal's `asdict(Sweep)` for the sidecar (its warm-sweep fields are absent: prefix caching is off). */
export function sweepRecord(s: Sweep): Record<string, unknown> {
  return {
    prefill_lens: [...s.prefillLens],
    decode_concurrency: [...s.decodeConcurrency],
    decode_tokens: s.decodeTokens,
    prefill_repeats: s.prefillRepeats,
    decode_input_lens: [...s.decodeInputLens],
    decode_repeats: s.decodeRepeats,
  };
}
