/**
 * A profile is accepted only if the preflight's `profile` gate will accept it. A fit over a limit on a
 * loaded machine is usually noise in one sweep, so it is measured again, a bounded number of times; each
 * try is handed back (and kept as evidence by the caller) so an operator can see the figures move. If no
 * try passes, the error names the engine, the figure, its value and the limit, and what to do: a profile
 * the gate rejects would only make the next preflight fail the same way on every `up`.
 */
import { ProfileError } from "./errors";
import { fitProblems, pyG, type FitEvidence, type FitLimits, type FitProblem } from "./fit-limits";
import { resampleBrief, resamplesIn, type ResampleSummary } from "./resample";

/** Tries per engine when the config does not say (`profiling.fitAttempts`). */
export const DEFAULT_FIT_ATTEMPTS = 3;

export interface FitTry<T> {
  /** 1-based. */
  readonly attempt: number;
  readonly result: T;
  /** What the gate would fail the row on; empty for the accepted try. */
  readonly problems: readonly FitProblem[];
  /** The samples this sweep took again because the timing host was disturbed (when it was gauged). */
  readonly resampled?: ResampleSummary;
}

export interface Accepted<T> {
  readonly accepted: T;
  /** Every try in order, the accepted one last. */
  readonly tries: ReadonlyArray<FitTry<T>>;
}

export interface AcceptOptions<T> {
  engineId: string;
  limits: FitLimits;
  attempts: number;
  /** One full measurement; a stop condition (unhealthy, restarted, ...) rejects and is not retried. */
  measure(attempt: number): Promise<T>;
  rowOf(result: T): FitEvidence;
  /** The sweep's re-sampling, when it was taken with a contention gauge. */
  resamplesOf?(result: T): ResampleSummary | undefined;
  /** Called with each try as soon as it is judged (the provider writes its evidence record here). */
  kept?(t: FitTry<T>): Promise<void>;
}

/**
 * One try's broken rules, briefly: `decode_fit_mape 0.0566 > 0.05`, or the rule's message when it has no
 * figure; then, when the sweep was gauged, its re-takes and the timing host's contention.
 */
function brief(t: FitTry<unknown>): string {
  const rules = t.problems.map((p) => (p.value !== null && p.limit !== null ? `${p.figure} ${p.value.toFixed(4)} > ${pyG(p.limit)}` : p.message)).join(", ");
  return `try ${t.attempt}: ${rules}${t.resampled ? `, ${resampleBrief(t.resampled)}` : ""}`;
}

/**
 * The error when every try failed, on one line: the engine, the last try's figure, its value and the
 * limit, every try's broken rules (so a figure that moved between tries is visible), and what to do.
 * The count is of every sweep run: `stopped` are the tries Narwhal's prefill rule ended unjudged.
 */
export interface StoppedTry {
  readonly attempt: number;
  readonly resampled?: ResampleSummary;
}

export function overLimitMessage(engineId: string, tries: ReadonlyArray<FitTry<unknown>>, stoppedTries: ReadonlyArray<number | StoppedTry> = []): string {
  const stopped = stoppedTries.map((s): StoppedTry => (typeof s === "number" ? { attempt: s } : s));
  const last = tries[tries.length - 1];
  const worst = last.problems.find((p) => p.value !== null && p.limit !== null) ?? last.problems[0];
  const n = tries.length + stopped.length;
  const count = `${n} ${n === 1 ? "try" : "tries"}`;
  const each = [...tries.map((t) => [t.attempt, brief(t)] as const), ...stopped.map((s) => [s.attempt, `try ${s.attempt}: the prefill fit stopped${s.resampled ? `, ${resampleBrief(s.resampled)}` : ""}`] as const)]
    .sort((a, b) => a[0] - b[0])
    .map(([, text]) => text);
  // Re-takes are samples within a sweep, never tries: counted apart, over the judged sweeps.
  const sweeps: ReadonlyArray<{ resampled?: ResampleSummary }> = [...tries, ...stopped];
  const retaken = sweeps.reduce((n, t) => n + (t.resampled?.retaken ?? 0), 0);
  const gauged = sweeps.some((t) => t.resampled);
  const resamples = gauged ? ` and ${retaken} re-taken ${retaken === 1 ? "sample" : "samples"}` : "";
  const head =
    worst.value !== null && worst.limit !== null
      ? `engine ${engineId}: ${worst.figure} ${worst.value.toFixed(4)} exceeds the limit ${pyG(worst.limit)} after ${count}${resamples}`
      : `engine ${engineId}: ${worst.message} after ${count}${resamples}`;
  return (
    `${head} (${each.join("; ")}); the preflight's profile gate would reject this profile. ` +
    "Re-run `pulumi up` when the engine's host and the router host are not loaded by other work, or raise profiling.fitAttempts; " +
    "a fit that never settles means the engine's timings are not what its profile can describe"
  );
}

/**
 * Measures until a try passes every limit or `attempts` tries are spent. Returns the passing try and
 * all tries; else throws `NARWHAL_PROFILE_LIMIT` (see {@link overLimitMessage}).
 */
export async function measureWithinLimits<T>(o: AcceptOptions<T>): Promise<Accepted<T>> {
  if (!Number.isInteger(o.attempts) || o.attempts < 1) throw new ProfileError("NARWHAL_PROFILE_LIMIT", `fit attempts must be a positive integer, got ${JSON.stringify(o.attempts)}`);
  const tries: Array<FitTry<T>> = [];
  /** The tries Narwhal's prefill rule stopped, with its words. */
  const stops: Array<{ attempt: number; message: string; resampled?: ResampleSummary }> = [];
  const said = (s: { attempt: number; message: string }) => `try ${s.attempt}: ${s.message}`;
  for (let attempt = 1; attempt <= o.attempts; attempt++) {
    let result: T;
    try {
      result = await o.measure(attempt);
    } catch (err) {
      // Narwhal's prefill stop (median fit error over 20%, or a point over 50%) judges a fit like the
      // limits do, and on a loaded machine it is as often noise in one sweep: measured again, within the
      // same tries. Every other stop (unhealthy, restarted) is final.
      if (!(err instanceof ProfileError && err.code === "NARWHAL_PROFILE_PREFILL_FIT")) throw err;
      const message = (err as Error).message;
      // The last stop's own words end the message (where its raw observations are kept); earlier ones precede it.
      if (attempt === o.attempts) throw new ProfileError("NARWHAL_PROFILE_PREFILL_FIT", `engine ${o.engineId}: the prefill fit stopped ${stops.length + 1} of ${attempt} tries (${[...stops.map(said), `try ${attempt}`].join("; ")}); try ${attempt}: ${message}`);
      const resampled = resamplesIn(err);
      stops.push({ attempt, message, ...(resampled ? { resampled } : {}) });
      continue;
    }
    const resampled = o.resamplesOf?.(result);
    const t: FitTry<T> = { attempt, result, problems: fitProblems(o.rowOf(result), o.limits), ...(resampled ? { resampled } : {}) };
    tries.push(t);
    await o.kept?.(t);
    if (!t.problems.length) return { accepted: result, tries };
  }
  throw new ProfileError("NARWHAL_PROFILE_LIMIT", overLimitMessage(o.engineId, tries, stops.map(({ attempt, resampled }) => ({ attempt, resampled }))));
}
