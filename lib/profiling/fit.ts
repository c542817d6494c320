/**
 * The fits narwhal-profile computes, term for term (narwhal/profiling/fitting.py): non-negative least
 * squares by checking every face of the constraint set, prefill as a quadratic in input tokens over each
 * length's median (with narwhal's optional block-split step), decode token interval as a plane in
 * resident KV tokens and active requests, and their error measures.
 */
import { ProfileError } from "./errors";

/** The contract's stop limits for the representative prefill fit. */
export const MAX_PREFILL_FIT_MAPE = 0.2;
export const MAX_PREFILL_POINT_ERROR = 0.5;
/** narwhal's split-step rule: lengths each side of the block boundary, lengths in all, share of plain error. */
const SPLIT_REGIME_LENGTHS = 2;
const SPLIT_MIN_LENGTHS = 6;
const SPLIT_ERROR_RATIO = 0.5;

const degenerate = () => new ProfileError("NARWHAL_PROFILE_FIT", "singular system: profiling samples are degenerate");

/** Gaussian elimination with partial pivoting. */
export function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]]);
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(m[r][col]) > Math.abs(m[pivot][col])) pivot = r;
    if (Math.abs(m[pivot][col]) < 1e-12) throw degenerate();
    [m[col], m[pivot]] = [m[pivot], m[col]];
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const f = m[r][col] / m[col][col];
      for (let c = col; c <= n; c++) m[r][c] -= f * m[col][c];
    }
  }
  return m.map((row, i) => row[n] / row[i]);
}

/** `y = Σ wᵢ·fᵢ` with every wᵢ ≥ 0: the least-squares optimum lies on one face; try each. */
export function nonnegativeFit(rows: readonly (readonly number[])[], ys: readonly number[]): number[] {
  const n = rows[0].length;
  const scales = Array.from({ length: n }, (_, i) => Math.max(...rows.map((r) => Math.abs(r[i]))) || 1);
  const scaled = rows.map((r) => r.map((v, i) => v / scales[i]));
  const gram = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => scaled.reduce((s, r) => s + r[i] * r[j], 0)));
  const rhs = Array.from({ length: n }, (_, i) => scaled.reduce((s, r, k) => s + r[i] * ys[k], 0));
  let best = new Array<number>(n).fill(0);
  let bestError = ys.reduce((s, y) => s + y * y, 0);
  for (let mask = 1; mask < 1 << n; mask++) {
    const active = Array.from({ length: n }, (_, i) => (mask & (1 << i)) !== 0);
    const matrix = gram.map((row, i) => row.map((v, j) => (active[i] && active[j] ? v : i === j ? 1 : 0)));
    let w: number[];
    try {
      w = solve(matrix, rhs.map((v, i) => (active[i] ? v : 0)));
    } catch {
      continue;
    }
    if (w.some((v) => v < 0)) continue;
    const error = scaled.reduce((s, r, k) => s + (r.reduce((t, v, i) => t + w[i] * v, 0) - ys[k]) ** 2, 0);
    if (error < bestError) [best, bestError] = [w, error];
  }
  return best.map((w, i) => w / scales[i]);
}

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
export const mean = (xs: readonly number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
export const relativeError = (predicted: number, observed: number): number => Math.abs(predicted - observed) / Math.max(observed, 1e-9);

/** `a·x² + b·x + c` with non-negative coefficients. */
export function fitQuadratic(samples: ReadonlyArray<readonly [number, number]>): [number, number, number] {
  if (samples.length < 3) throw new ProfileError("NARWHAL_PROFILE_FIT", "a quadratic needs at least three samples");
  if (samples.some(([x, y]) => !Number.isFinite(x) || !Number.isFinite(y) || x < 0 || y < 0)) throw new ProfileError("NARWHAL_PROFILE_FIT", "prefill samples must be finite and nonnegative");
  if (new Set(samples.map(([x]) => x)).size < 3) throw new ProfileError("NARWHAL_PROFILE_FIT", "singular system: profiling needs three distinct input lengths");
  const [a, b, c] = nonnegativeFit(samples.map(([x]) => [x * x, x, 1]), samples.map(([, y]) => y));
  return [a, b, c];
}

/** narwhal's `splits_prefill`: a prompt ending inside a cache block past the first. */
export const splitsPrefill = (length: number, blockTokens: number | null): boolean => blockTokens !== null && length > blockTokens && length % blockTokens !== 0;

export interface PrefillFit {
  a: number;
  b: number;
  c: number;
  /** The block-split step, or null when the sweep does not meet narwhal's split rule. */
  split: number | null;
  /** Each length's median: what the fit is over. */
  representatives: Array<[number, number]>;
  /** Relative error of the fit at each representative. */
  pointErrors: number[];
  mape: number;
  worst: number;
}

/** Quadratic fit over each length's median; no stop check (see {@link fitPrefill}). */
export function fitPrefillMedians(samples: ReadonlyArray<readonly [number, number]>, blockTokens: number | null = null): PrefillFit {
  if (samples.some(([x, y]) => !Number.isFinite(x) || !Number.isFinite(y) || x < 0 || y < 0)) throw new ProfileError("NARWHAL_PROFILE_FIT", "prefill samples must be finite and nonnegative");
  const groups = new Map<number, number[]>();
  for (const [n, t] of samples) groups.set(n, [...(groups.get(n) ?? []), t]);
  const representatives = [...groups].sort(([x], [y]) => x - y).map(([n, ts]): [number, number] => [n, median(ts)]);
  const flags = representatives.map(([n]) => (splitsPrefill(n, blockTokens) ? 1 : 0));
  const errorsOf = (a: number, b: number, c: number, step: number) => representatives.map(([n, t], i) => relativeError(a * n * n + b * n + c + step * flags[i], t));
  let [a, b, c] = fitQuadratic(representatives);
  let split: number | null = null;
  let errors = errorsOf(a, b, c, 0);
  const flagged = flags.filter((f) => f).length;
  if (representatives.length >= SPLIT_MIN_LENGTHS && flagged >= SPLIT_REGIME_LENGTHS && representatives.length - flagged >= SPLIT_REGIME_LENGTHS) {
    const w = nonnegativeFit(representatives.map(([n], i) => [n * n, n, 1, flags[i]]), representatives.map(([, t]) => t));
    const stepped = errorsOf(w[0], w[1], w[2], w[3]);
    if (mean(stepped) < SPLIT_ERROR_RATIO * mean(errors)) [a, b, c, split, errors] = [w[0], w[1], w[2], w[3], stepped];
  }
  return { a, b, c, split, representatives, pointErrors: errors, mape: mean(errors), worst: Math.max(...errors) };
}

/** The fit, or the contract's stop: above 20% mean or 50% worst-point error. */
export function fitPrefill(samples: ReadonlyArray<readonly [number, number]>, blockTokens: number | null = null): PrefillFit {
  const fit = fitPrefillMedians(samples, blockTokens);
  if (fit.mape > MAX_PREFILL_FIT_MAPE || fit.worst > MAX_PREFILL_POINT_ERROR) {
    throw new ProfileError(
      "NARWHAL_PROFILE_PREFILL_FIT",
      `prefill median fit error ${pct(fit.mape)}, worst point ${pct(fit.worst)}; inspect the retained per-length measurements before using this profile`,
    );
  }
  return fit;
}

/** Python's `f"{x:.1%}"`. */
export const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;

/** One decode point: median active requests, median resident KV tokens, mean token interval (s). */
export type DecodePoint = readonly [requests: number, kvTokens: number, seconds: number];

export interface DecodePlane {
  /** Seconds per resident KV token. */
  kvSlope: number;
  /** Seconds per active request. */
  requestSlope: number;
  intercept: number;
}

/** `interval = requests·r + kv·k + c` with non-negative coefficients; an unidentifiable axis is an error. */
export function fitDecodePlane(points: readonly DecodePoint[]): DecodePlane {
  if (points.length < 3) throw new ProfileError("NARWHAL_PROFILE_FIT", "a decode plane needs at least three samples");
  if (points.some((p) => p.some((v) => !Number.isFinite(v) || v <= 0))) throw new ProfileError("NARWHAL_PROFILE_FIT", "decode samples must be finite and positive");
  const rScale = Math.max(...points.map((p) => p[0]));
  const kScale = Math.max(...points.map((p) => p[1]));
  const rows = points.map((p) => [p[0] / rScale, p[1] / kScale, 1]);
  const ys = points.map((p) => p[2]);
  const gram = [0, 1, 2].map((i) => [0, 1, 2].map((j) => rows.reduce((s, r) => s + r[i] * r[j], 0)));
  const rhs = [0, 1, 2].map((i) => rows.reduce((s, r, k) => s + r[i] * ys[k], 0));
  // Raises on unidentifiable axes, which a boundary fit could mask.
  solve(gram, rhs);
  const [r, k, c] = nonnegativeFit(rows, ys);
  return { kvSlope: k / kScale, requestSlope: r / rScale, intercept: c };
}

export function decodeMape(points: readonly DecodePoint[], plane: DecodePlane): number {
  if (!points.length) return 0;
  return mean(points.map(([q, kv, y]) => relativeError(plane.requestSlope * q + plane.kvSlope * kv + plane.intercept, y)));
}

/** Leave-one-point-out error, or null with fewer than four points or an unfittable subset. */
export function decodeCrossValidationMape(points: readonly DecodePoint[]): number | null {
  if (points.length < 4) return null;
  const errors: number[] = [];
  for (let i = 0; i < points.length; i++) {
    let plane: DecodePlane;
    try {
      plane = fitDecodePlane(points.filter((_, j) => j !== i));
    } catch {
      return null;
    }
    errors.push(decodeMape([points[i]], plane));
  }
  return mean(errors);
}
