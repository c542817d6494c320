/**
 * The latency model (ground truth for profile fits) and the clock that plays it back.
 *
 * Every simulated duration is multiplied by the time scale before it is slept. Timers in Node fire
 * late by up to a millisecond or so, which at a small time scale is larger than a whole decode step, so
 * the clock works on absolute deadlines: the decode loop chains each step's deadline from the previous
 * deadline (not from when the timer actually fired), so errors do not accumulate and the mean step time
 * is exact; one-off waits (prefill) finish with a short yield-loop so they end on time too.
 */
import { performance } from "node:perf_hooks";
import type { LatencyCoefficients } from "./config";

/** Simulated seconds to prefill n input tokens: a·n² + b·n + c. */
export function prefillSeconds(c: LatencyCoefficients, n: number): number {
  return c.prefillA * n * n + c.prefillB * n + c.prefillC;
}

/** Simulated seconds for one decode step with `kvTokens` resident across `requests` active requests. */
export function decodeStepSeconds(c: LatencyCoefficients, kvTokens: number, requests: number): number {
  return c.decodeBase + c.decodeKv * kvTokens + c.decodeReq * requests;
}

/** Milliseconds on the monotonic clock. */
export const now = (): number => performance.now();

/** Below this many ms before a deadline, stop trusting setTimeout and yield until the deadline. */
const SPIN_MS = 1.5;

/**
 * Resolves at `deadline` (performance.now() ms). With `precise`, the last SPIN_MS are waited out with
 * setImmediate (which still lets I/O run) instead of a timer. Always yields to the event loop at least
 * once, so a loop that is behind schedule still lets sockets be served between steps.
 */
export function sleepUntil(deadline: number, precise = true): Promise<void> {
  return new Promise((resolve) => {
    const step = () => {
      const left = deadline - now();
      if (left <= 0) return resolve();
      if (precise && left <= SPIN_MS) return void setImmediate(step);
      setTimeout(step, precise ? left - SPIN_MS : left);
    };
    setImmediate(step);
  });
}
