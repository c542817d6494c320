/**
 * A profile is accepted only if the preflight's `profile` gate will accept it. A fit over a limit on a
 * loaded machine is usually noise in one sweep, so it is measured again, a bounded number of times; each
 * try is handed back (and kept as evidence by the caller) so an operator can see the figures move. If no
 * try passes, the error names the engine, the figure, its value and the limit, and what to do: a profile
 * the gate rejects would only make the next preflight fail the same way on every `up`.
 */
import { ProfileError } from "./errors";
import { fitProblems, pyG, type FitEvidence, type FitLimits, type FitProblem } from "./fit-limits";

/** Tries per engine when the config does not say (`profiling.fitAttempts`). */
export const DEFAULT_FIT_ATTEMPTS = 3;

export interface FitTry<T> {
  /** 1-based. */
  readonly attempt: number;
  readonly result: T;
  /** What the gate would fail the row on; empty for the accepted try. */
  readonly problems: readonly FitProblem[];
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
  /** Called with each try as soon as it is judged (the provider writes its evidence record here). */
  kept?(t: FitTry<T>): Promise<void>;
}

/** One try's broken rules, briefly: `decode_fit_mape 0.0566 > 0.05`, or the rule's message when it has no figure. */
function brief(t: FitTry<unknown>): string {
  return `try ${t.attempt}: ${t.problems.map((p) => (p.value !== null && p.limit !== null ? `${p.figure} ${p.value.toFixed(4)} > ${pyG(p.limit)}` : p.message)).join(", ")}`;
}

/**
 * The error when every try failed, on one line: the engine, the last try's figure, its value and the
 * limit, every try's broken rules (so a figure that moved between tries is visible), and what to do.
 * The count is of every sweep run: `stopped` are the tries Narwhal's prefill rule ended unjudged.
 */
export function overLimitMessage(engineId: string, tries: ReadonlyArray<FitTry<unknown>>, stopped: readonly number[] = []): string {
  const last = tries[tries.length - 1];
  const worst = last.problems.find((p) => p.value !== null && p.limit !== null) ?? last.problems[0];
  const n = tries.length + stopped.length;
  const count = `${n} ${n === 1 ? "try" : "tries"}`;
  const each = [...tries.map((t) => [t.attempt, brief(t)] as const), ...stopped.map((a) => [a, `try ${a}: the prefill fit stopped`] as const)]
    .sort((a, b) => a[0] - b[0])
    .map(([, text]) => text);
  const head = worst.value !== null && worst.limit !== null ? `engine ${engineId}: ${worst.figure} ${worst.value.toFixed(4)} exceeds the limit ${pyG(worst.limit)} after ${count}` : `engine ${engineId}: ${worst.message} after ${count}`;
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
  const stops: Array<{ attempt: number; message: string }> = [];
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
      stops.push({ attempt, message });
      continue;
    }
    const t: FitTry<T> = { attempt, result, problems: fitProblems(o.rowOf(result), o.limits) };
    tries.push(t);
    await o.kept?.(t);
    if (!t.problems.length) return { accepted: result, tries };
  }
  throw new ProfileError("NARWHAL_PROFILE_LIMIT", overLimitMessage(o.engineId, tries, stops.map((s) => s.attempt)));
}
