/**
 * First-token deadline calibration (runbook "Calibrate the first-token deadline"): per directed path
 * and input length, max(observed maximum, 1.2 × nearest-rank p99) + 0.5 s; the candidate deadline sits
 * above the largest group result, and deadline + measured prefill + router overhead must fit the
 * client's TTFT requirement.
 */
export const MIN_SAMPLES_PER_GROUP = 100;
export const P99_FACTOR = 1.2;
export const MARGIN_S = 0.5;

/** Nearest-rank percentile: the smallest sample with at least q of the samples at or below it. */
export function nearestRank(samples: readonly number[], q: number): number {
  if (!samples.length) throw new Error("nearest-rank percentile of no samples");
  if (!(q > 0 && q <= 1)) throw new Error(`percentile ${q} outside (0, 1]`);
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
}

export interface CalibrationGroup {
  readonly producer: string;
  readonly consumer: string;
  readonly inputTokens: number;
  /** Elapsed seconds from starting the decode request to its first generated token, completed samples only. */
  readonly firstTokenSeconds: readonly number[];
  readonly prefillSeconds: readonly number[];
  /** Failed attempts and observation-window expiries, all kept. */
  readonly failures: readonly string[];
}

export interface GroupResult {
  readonly producer: string;
  readonly consumer: string;
  readonly inputTokens: number;
  readonly samples: number;
  readonly max: number;
  readonly p99: number;
  readonly candidate: number;
  readonly failures: number;
}

export function groupCandidate(g: CalibrationGroup, minSamples = MIN_SAMPLES_PER_GROUP): GroupResult {
  const n = g.firstTokenSeconds.length;
  if (n < minSamples) throw new Error(`calibration ${g.producer} -> ${g.consumer} at ${g.inputTokens} tokens: ${n} completed samples, at least ${minSamples} required`);
  const max = g.firstTokenSeconds.reduce((m, x) => Math.max(m, x), -Infinity);
  const p99 = nearestRank(g.firstTokenSeconds, 0.99);
  return { producer: g.producer, consumer: g.consumer, inputTokens: g.inputTokens, samples: n, max, p99, candidate: Math.max(max, P99_FACTOR * p99) + MARGIN_S, failures: g.failures.length };
}

export interface CalibrationResult {
  readonly groups: readonly GroupResult[];
  /** The largest group result; the deadline must be set above it. */
  readonly floor: number;
  /** The proposed deadline: the floor rounded up to the next tenth of a second strictly above it. */
  readonly deadline: number;
  /** The largest measured prefill, seconds. */
  readonly prefillS: number;
  /** deadline + the largest measured prefill + router overhead. */
  readonly clientTtft: number;
  readonly fitsClientTtft: boolean;
}

export function calibrate(groups: readonly CalibrationGroup[], opts: { routerOverheadS: number; clientTtftS: number; minSamples?: number }): CalibrationResult {
  if (!groups.length) throw new Error("calibration needs at least one path and input length");
  const results = groups.map((g) => groupCandidate(g, opts.minSamples));
  const floor = Math.max(...results.map((r) => r.candidate));
  const deadline = Math.floor(floor * 10 + 1e-9) / 10 + 0.1;
  // A loop, not spread: a group holds hundreds of samples and a fleet many groups.
  let prefill = 0;
  for (const g of groups) for (const s of g.prefillSeconds) prefill = Math.max(prefill, s);
  const proposed = Number(deadline.toFixed(1));
  const fit = clientTtftFit(proposed, prefill, opts.routerOverheadS, opts.clientTtftS);
  return { groups: results, floor, deadline: proposed, prefillS: prefill, ...fit };
}

/** Whether deadline + measured prefill + router overhead fit the client's TTFT requirement. */
export function clientTtftFit(deadlineS: number, prefillS: number, routerOverheadS: number, clientTtftS: number): { clientTtft: number; fitsClientTtft: boolean } {
  const clientTtft = deadlineS + prefillS + routerOverheadS;
  return { clientTtft, fitsClientTtft: clientTtft <= clientTtftS };
}

/** The diagnostic observation bound must exceed the current deadline and stay within the request timeout. */
export function observationBoundProblem(boundS: number, firstTokenTimeoutS: number, requestTimeoutS: number): string | undefined {
  if (!(boundS > firstTokenTimeoutS)) return `observation bound ${boundS}s must exceed engine.first_token_timeout_s ${firstTokenTimeoutS}s`;
  if (boundS > requestTimeoutS) return `observation bound ${boundS}s must be within serving.request_timeout_s ${requestTimeoutS}s`;
  return undefined;
}
