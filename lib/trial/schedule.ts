/**
 * A trial point's arrival schedule, as `vllm bench serve` builds it since vLLM PR #21108: every gap drawn
 * up front from the point's seed, summed into absolute due times from the point's start, and the sums
 * rescaled so the last request is due at exactly requests / rate. The client then waits for each due time
 * against one start instant, never for a relative gap, so send overhead cannot accumulate into drift.
 *
 * The first request is due one (rescaled) gap after the start, not at the start, exactly as vllm bench's
 * cumulative delays are: request i is due at the sum of gaps 0..i. A point of N requests therefore spans N
 * gaps, and N / (time of the last send) is the offered rate when the schedule is kept.
 */
import { pointProblems } from "./point";
import { mulberry32 } from "./random";
import type { ScheduledRequest, TrialPoint, WorkloadClass } from "./types";

/** The highest offered rate any test runs a point at (the e2e stays at or below it); bench:trial-client must sustain 10x. */
export const HIGHEST_TEST_RATE = 4;

/** The point's due times and request lengths; the same point always gives the same schedule. */
export function arrivalSchedule(point: TrialPoint): ScheduledRequest[] {
  checkPoint(point);
  const n = point.requests;
  const next = mulberry32(point.seed);
  const totalWeight = point.mix.reduce((s, c) => s + c.weight, 0);
  const sums: number[] = new Array<number>(n);
  const classes: WorkloadClass[] = new Array<WorkloadClass>(n);
  let sum = 0;
  for (let i = 0; i < n; i++) {
    // Both draws are made whatever the arrival kind, so switching `arrival` keeps every request's class.
    const u = next();
    sum += point.arrival === "poisson" ? -Math.log(1 - u) / point.rate : 1 / point.rate;
    sums[i] = sum;
    classes[i] = pickClass(point.mix, totalWeight, next());
  }
  const span = n / point.rate;
  // A Poisson draw whose gaps are all zero (probability nil) cannot be rescaled: fall back to even gaps.
  const scale = sum > 0 ? span / sum : 0;
  return classes.map((c, i) => ({
    index: i,
    dueS: point.arrival === "constant" || scale === 0 ? (i + 1) / point.rate : i === n - 1 ? span : sums[i] * scale,
    promptTokens: c.promptTokens,
    outputTokens: c.outputTokens,
  }));
}

function pickClass(mix: WorkloadClass[], totalWeight: number, u: number): WorkloadClass {
  let at = u * totalWeight;
  for (const c of mix) {
    if (at < c.weight) return c;
    at -= c.weight;
  }
  // Rounding can leave `at` a hair past the last positive weight.
  return [...mix].reverse().find((c) => c.weight > 0) ?? mix[mix.length - 1];
}


/** Refuses a point no schedule can be built from, naming the field (the config schema refuses these first). */
export function checkPoint(point: TrialPoint): void {
  const problems = pointProblems(point);
  if (problems.length) throw new Error(`trial point ${JSON.stringify(point.id)}: ${problems.join("; ")}`);
}
