/**
 * What the stored profile fits predict for a trial point, and the workload range they cover.
 *
 * The model, per point (offered rate λ, a mix of classes k with shares p_k, prompt s_k, output o_k):
 *
 * - Prefill. The P prefill engines share the arrivals evenly (λ/P each). A class's service time on an
 *   engine is Narwhal's `prefill_time(s_k)` for that engine's row. Each engine is a single-server queue
 *   over the mix: E[S] = Σ p_k S_k, E[S²] = Σ p_k S_k², utilisation ρ = (λ/P)·E[S], and the wait is
 *   Pollaczek-Khinchine's W = (λ/P)·E[S²] / (2(1 − ρ)) for Poisson arrivals (M/G/1). For constant
 *   arrivals it is Kingman's G/G/1 form with no arrival variability, W = (E[S²] − E[S]²)/(2E[S]) · ρ/(1 − ρ),
 *   which equals Pollaczek-Khinchine when the arrivals are Poisson.
 * - Decode. Each of the D decode engines takes λ/D. Its resident requests n follow Little's law,
 *   n = (λ/D) · E[o] · τ(n), where τ is Narwhal's `token_interval(n · c, n)` and c the mean context of a
 *   resident request, c = Σ p_k o_k (s_k + o_k/2) / Σ p_k o_k (prompt plus half the output, weighted by
 *   how long each class stays resident, which is proportional to its output). n is the fixed point,
 *   found by bisection (τ never falls as n grows). As Narwhal's `decode_rps` does, a batch below the
 *   smallest measured batch takes that batch's interval, which also keeps a lone request's batch at one
 *   request rather than the fractional time average.
 * - Latency. TTFT_k = W + S_k + τ (the decode engine's first interval); TPOT = τ;
 *   E2EL_k = TTFT_k + (o_k − 1)·τ. Per-engine figures are averaged over the engines of the role (the
 *   arrivals split evenly), and TTFT and E2EL are mix-weighted means.
 *
 * The range: prompts within every prefill row's measured sweep, outputs within every decode row's, and a
 * rate whose predicted decode batch stays within every decode row's `decode_request_limit` (its measured
 * requests and KV tokens) with every prefill engine's utilisation below 1. Outside it the fits are
 * extrapolating and the prediction is refused.
 */
import { prefillTime, tokenInterval } from "../preflight/judge";
import type { ProfileRow } from "../profiling/store";
import type { Departure, Prediction, ProfiledRange, TrialPoint, TrialSummary, WorkloadClass } from "./types";

export interface PredictEngine {
  role: "prefill" | "decode";
  row: ProfileRow;
}

/**
 * `NARWHAL_TRIAL_RANGE`: a point lies outside the profiled workload range. `NARWHAL_TRIAL_PREDICT`: the
 * engines or the mix cannot be modelled (no engine of a role, an empty mix, a bound that is not positive).
 * Callers match on `code`, not `instanceof`.
 */
export class TrialPredictError extends Error {
  constructor(
    readonly code: "NARWHAL_TRIAL_RANGE" | "NARWHAL_TRIAL_PREDICT",
    message: string,
  ) {
    super(message);
    this.name = "TrialPredictError";
  }
}

/** Narwhal's `Profile.decode_request_limit`: concurrent decode requests at a context length, 0 when unmeasured. */
export function decodeRequestLimit(row: ProfileRow, contextTokens: number): number {
  const measured = row.decode_max_requests;
  if (!(contextTokens > 0) || !(measured > 0)) return 0;
  const limits = [measured];
  const tokenBounds = [row.kv_capacity_tokens, row.decode_max_kv_tokens].filter((b): b is number => b !== undefined);
  if (tokenBounds.length) limits.push(Math.max(1, Math.trunc(Math.min(...tokenBounds) / contextTokens)));
  return Math.max(1, Math.min(...limits));
}

interface Share {
  p: number;
  prompt: number;
  output: number;
}

function shares(mix: readonly WorkloadClass[]): Share[] {
  const total = mix.reduce((s, c) => s + c.weight, 0);
  if (!mix.length || !(total > 0)) throw new TrialPredictError("NARWHAL_TRIAL_PREDICT", "the workload mix is empty or its weights sum to zero: give each class a positive weight");
  return mix.map((c) => ({ p: c.weight / total, prompt: c.promptTokens, output: c.outputTokens }));
}

function split(engines: readonly PredictEngine[]): { prefill: ProfileRow[]; decode: ProfileRow[] } {
  const prefill = engines.filter((e) => e.role === "prefill").map((e) => e.row);
  const decode = engines.filter((e) => e.role === "decode").map((e) => e.row);
  for (const [role, rows] of [["prefill", prefill], ["decode", decode]] as const) {
    if (!rows.length) throw new TrialPredictError("NARWHAL_TRIAL_PREDICT", `no ${role}-role engine with a profile row: every request takes a prefill leg and a decode leg, so both roles need a profiled engine`);
  }
  return { prefill, decode };
}

/** The output-weighted mean context of a resident decode request: prompt plus half the output. */
function residentContext(mix: readonly Share[]): number {
  const weight = mix.reduce((s, c) => s + c.p * c.output, 0);
  return mix.reduce((s, c) => s + c.p * c.output * (c.prompt + c.output / 2), 0) / weight;
}

/** The interval at a batch of n requests of context c, floored at the row's smallest measured batch. */
function interval(row: ProfileRow, n: number, context: number): number {
  return tokenInterval(row, Math.max(n * context, row.decode_min_kv_tokens), Math.max(n, row.decode_min_requests));
}

/** The smallest n with n = a·τ(n), or Infinity when the decode engine cannot keep up (no fixed point). */
function residentRequests(row: ProfileRow, a: number, context: number): number {
  if (a <= 0) return 0;
  const h = (n: number): number => n - a * interval(row, n, context);
  let hi = 1;
  while (h(hi) <= 0) {
    hi *= 2;
    if (hi > 1e12) return Infinity;
  }
  let lo = 0;
  for (let i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
    const mid = (lo + hi) / 2;
    if (h(mid) <= 0) lo = mid;
    else hi = mid;
  }
  return hi;
}

interface Side {
  /** Per prefill engine: wait, service per class, utilisation. */
  prefill: Array<{ waitS: number; serviceS: number[]; utilisation: number }>;
  /** Per decode engine: resident requests, interval, and its request limit at the context. */
  decode: Array<{ resident: number; intervalS: number; limit: number }>;
}

function model(rows: { prefill: ProfileRow[]; decode: ProfileRow[] }, mix: readonly Share[], rate: number, arrival: TrialPoint["arrival"]): Side {
  const perPrefill = rate / rows.prefill.length;
  const prefill = rows.prefill.map((row) => {
    const serviceS = mix.map((c) => prefillTime(row, c.prompt));
    const mean = mix.reduce((s, c, k) => s + c.p * serviceS[k], 0);
    const second = mix.reduce((s, c, k) => s + c.p * serviceS[k] ** 2, 0);
    const utilisation = perPrefill * mean;
    let waitS = Infinity;
    if (utilisation < 1) {
      waitS = arrival === "poisson" ? (perPrefill * second) / (2 * (1 - utilisation)) : mean > 0 ? ((second - mean ** 2) / (2 * mean)) * (utilisation / (1 - utilisation)) : 0;
    }
    return { waitS: Math.max(0, waitS), serviceS, utilisation };
  });
  const context = residentContext(mix);
  const meanOutput = mix.reduce((s, c) => s + c.p * c.output, 0);
  const perDecode = rate / rows.decode.length;
  const decode = rows.decode.map((row) => {
    const resident = residentRequests(row, perDecode * meanOutput, context);
    const intervalS = Number.isFinite(resident) ? interval(row, resident, context) : Infinity;
    return { resident, intervalS, limit: decodeRequestLimit(row, context) };
  });
  return { prefill, decode };
}

function withinCapacity(side: Side): boolean {
  return side.prefill.every((e) => e.utilisation < 1) && side.decode.every((e) => e.resident <= e.limit);
}

/** The mix a range is judged for when none is given: the most demanding corner of the measured lengths. */
function cornerMix(prompt: [number, number], output: [number, number]): Share[] {
  return [{ p: 1, prompt: prompt[1], output: output[1] }];
}

const measured = (xs: ReadonlyArray<number | null | undefined>): number[] => xs.filter((x): x is number => typeof x === "number" && Number.isFinite(x));
/**
 * The range's ends over every row that measured them. A row without a bound covers every length on that
 * side, as Narwhal's `covers_prefill` and `covers_output` read a bound it does not carry.
 */
const lowest = (xs: ReadonlyArray<number | null | undefined>): number => Math.max(1, ...measured(xs));
const highest = (xs: ReadonlyArray<number | null | undefined>): number => (measured(xs).length ? Math.min(...measured(xs)) : Number.MAX_SAFE_INTEGER);

/**
 * The workload range the rows cover. `maxRate` is for `mix` (a point's own mix); without one it is for
 * the longest prompt and output in range, the most demanding single class, so it is a safe lower bound.
 */
export function profiledRange(engines: readonly PredictEngine[], mix?: readonly WorkloadClass[]): ProfiledRange {
  const rows = split(engines);
  const promptTokens: [number, number] = [lowest(rows.prefill.map((r) => r.prefill_min_tokens)), highest(rows.prefill.map((r) => r.prefill_max_tokens))];
  const outputTokens: [number, number] = [lowest(rows.decode.map((r) => r.decode_min_output_tokens)), highest(rows.decode.map((r) => r.decode_max_output_tokens))];
  const classes = mix ? shares(mix) : cornerMix(promptTokens, outputTokens);
  return { promptTokens, outputTokens, maxRate: maxRate(rows, classes) };
}

/** Bisection on the rate: the resident batch grows with it and the prefill utilisation with it too. */
function maxRate(rows: { prefill: ProfileRow[]; decode: ProfileRow[] }, mix: readonly Share[]): number {
  // Poisson and constant arrivals give the same utilisation and fixed point, so the arrival is immaterial here.
  const ok = (rate: number): boolean => withinCapacity(model(rows, mix, rate, "poisson"));
  const meanOutput = mix.reduce((s, c) => s + c.p * c.output, 0);
  const context = residentContext(mix);
  // Upper bounds: prefill utilisation reaches 1, or even the smallest interval would overfill the batch.
  const bounds = [
    ...rows.prefill.map((row) => rows.prefill.length / mix.reduce((s, c) => s + c.p * prefillTime(row, c.prompt), 0)),
    ...rows.decode.map((row) => (rows.decode.length * decodeRequestLimit(row, context)) / (meanOutput * interval(row, 0, context))),
  ].filter((b) => Number.isFinite(b) && b > 0);
  let hi = bounds.length ? Math.min(...bounds) : 0;
  if (!(hi > 0) || !rows.decode.every((row) => decodeRequestLimit(row, context) > 0)) return 0;
  if (ok(hi)) return hi;
  let lo = 0;
  for (let i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
    const mid = (lo + hi) / 2;
    if (ok(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

const fmt = (x: number): string => String(Number(x.toPrecision(4)));

/**
 * Why a point lies outside the range, one sentence per field, each naming the point, the field, the value,
 * the range and the fix. `index` is the point's place in `trial.points` (the id stands in without it).
 * `range.maxRate` must be the range for this point's mix ({@link pointRange} gives both).
 */
export function rangeProblems(point: TrialPoint, range: ProfiledRange, index?: number): string[] {
  const at = index === undefined ? `trial.points[id=${point.id}]` : `trial.points[${index}]`;
  const problems: string[] = [];
  if (!(point.rate > 0)) problems.push(`${at}.rate is ${point.rate}; give a positive offered rate in requests per second`);
  else if (point.rate > range.maxRate) {
    problems.push(
      `${at}.rate ${fmt(point.rate)} req/s is above ${fmt(range.maxRate)} req/s, the highest rate for this mix whose predicted decode batch stays within the profiled decode requests and KV tokens with prefill below saturation; lower the rate, or profile a wider decode sweep (more concurrency) or add engines`,
    );
  }
  point.mix.forEach((c, j) => {
    const [pLo, pHi] = range.promptTokens;
    if (c.promptTokens < pLo || c.promptTokens > pHi) {
      problems.push(`${at}.mix[${j}].promptTokens ${c.promptTokens} is outside the profiled prefill sweep [${pLo}, ${pHi}]; use a prompt length within it, or profile a wider prefill sweep`);
    }
    const [oLo, oHi] = range.outputTokens;
    if (c.outputTokens < oLo || c.outputTokens > oHi) {
      problems.push(`${at}.mix[${j}].outputTokens ${c.outputTokens} is outside the profiled decode outputs [${oLo}, ${oHi}]; use an output length within it, or profile a wider decode sweep`);
    }
  });
  return problems;
}

/**
 * A point against the range the rows cover for its own mix: the range (its prompt and output lengths and
 * the highest rate), and why the point lies outside it, none when it lies within. The load-trial check,
 * the prediction and the trial's record all judge a point by this one range.
 */
export function pointRange(engines: readonly PredictEngine[], point: TrialPoint, index?: number): { range: ProfiledRange; problems: string[] } {
  const range = profiledRange(engines, point.mix);
  return { range, problems: rangeProblems(point, range, index) };
}

/** The prediction at the point's rate; throws `NARWHAL_TRIAL_RANGE` naming each field outside the range. */
export function predictPoint(engines: readonly PredictEngine[], point: TrialPoint, index?: number): Prediction {
  const { problems } = pointRange(engines, point, index);
  if (problems.length) throw new TrialPredictError("NARWHAL_TRIAL_RANGE", problems.join("\n"));
  return predictAt(split(engines), shares(point.mix), point.rate, point.arrival);
}

function predictAt(rows: { prefill: ProfileRow[]; decode: ProfileRow[] }, mix: readonly Share[], rate: number, arrival: TrialPoint["arrival"]): Prediction {
  const side = model(rows, mix, rate, arrival);
  const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
  const waitS = mean(side.prefill.map((e) => e.waitS));
  const serviceS = mix.map((_, k) => mean(side.prefill.map((e) => e.serviceS[k])));
  const tpotS = mean(side.decode.map((e) => e.intervalS));
  const ttft = mix.map((_, k) => waitS + serviceS[k] + tpotS);
  const ttftS = mix.reduce((s, c, k) => s + c.p * ttft[k], 0);
  const e2elS = mix.reduce((s, c, k) => s + c.p * (ttft[k] + (c.output - 1) * tpotS), 0);
  return {
    ttftS,
    tpotS,
    e2elS,
    // The busiest engine of each role: the one that leaves the range first.
    decodeRequestsPerEngine: Math.max(...side.decode.map((e) => e.resident)),
    prefillUtilisation: Math.max(...side.prefill.map((e) => e.utilisation)),
  };
}

/** Predictions at `steps` rates evenly spaced from maxRate/steps up to the range's maxRate for the point's mix. */
export function predictedCurve(engines: readonly PredictEngine[], point: TrialPoint, steps = 12): Array<{ rate: number; ttftS: number; tpotS: number }> {
  if (!Number.isInteger(steps) || steps < 1) throw new TrialPredictError("NARWHAL_TRIAL_PREDICT", `predicted curve steps ${steps}: give a positive whole number`);
  const rows = split(engines);
  const mix = shares(point.mix);
  const top = maxRate(rows, mix);
  if (!(top > 0)) return [];
  return Array.from({ length: steps }, (_, i) => {
    const rate = (top * (i + 1)) / steps;
    const p = predictAt(rows, mix, rate, point.arrival);
    return { rate, ttftS: p.ttftS, tpotS: p.tpotS };
  });
}

/**
 * The prediction as the client sees it through the router: the router's own overhead (the one
 * `calibration.routerOverheadS` states for the client TTFT check) added to every first token.
 */
export function throughRouter<P extends { ttftS: number }>(p: P, routerOverheadS: number): P {
  const e2el = "e2elS" in p && typeof p.e2elS === "number" ? { e2elS: p.e2elS + routerOverheadS } : {};
  return { ...p, ttftS: p.ttftS + routerOverheadS, ...e2el };
}

/**
 * Measured medians against the prediction: |measured − predicted| / predicted for TTFT and TPOT, flagged
 * when either passes `bound`. With no successful request the medians read 0 and depart by 1.
 */
export function departure(prediction: Prediction, summary: TrialSummary, bound: number): Departure {
  if (!(bound > 0) || !Number.isFinite(bound)) throw new TrialPredictError("NARWHAL_TRIAL_PREDICT", `departure bound ${bound}: give a positive relative difference (0.5 is 50%)`);
  const rel = (measured: number, predicted: number): number => Math.abs(measured - predicted) / Math.max(predicted, 1e-9);
  const ttft = rel(summary.median_ttft_ms / 1000, prediction.ttftS);
  const tpot = rel(summary.median_tpot_ms / 1000, prediction.tpotS);
  return { ttft, tpot, bound, flagged: ttft > bound || tpot > bound };
}
