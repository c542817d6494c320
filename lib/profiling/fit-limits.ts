/**
 * Narwhal's profile-validation limits (`decode_evidence_problems`), in one place: the Profile resource
 * accepts a row only if this finds nothing, and the preflight's `profile` gate fails a row on exactly
 * what this finds. Two copies once drifted apart (the profile accepted a `decode_fit_mape` of 0.0566 that
 * the gate then rejected against 0.05, and every later `up` failed the same way), so both call this.
 */

/** The fleet document's `profiles.max_decode_fit_mape` and `profiles.max_decode_cv_mape`. */
export interface FitLimits {
  readonly maxDecodeFitMape: number;
  readonly maxDecodeCvMape: number;
}

/** narwhal-inference 0.7.0's defaults, which apply while the fleet document leaves the keys out (ours does). */
export const NARWHAL_FIT_LIMITS: FitLimits = { maxDecodeFitMape: 0.05, maxDecodeCvMape: 0.13 };

const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** Python's `format(x, "g")`, which narwhal's messages print limits with (1e-06, not 0.000001). */
export function pyG(x: number): string {
  if (!Number.isFinite(x)) return String(x).toLowerCase().replace("infinity", "inf");
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  const [mantissa, e] = x.toExponential(5).split("e") as [string, string];
  const exp = Number(e);
  const trim = (t: string) => (t.includes(".") ? t.replace(/0+$/, "").replace(/\.$/, "") : t);
  if (exp < -4 || exp >= 6) return `${trim(mantissa)}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  return trim(x.toFixed(Math.max(0, 5 - exp)));
}

/** The limits a fleet document's `profiles` block sets, Narwhal's defaults where it leaves a key out. */
export function fitLimitsOf(profilesBlock: unknown): FitLimits {
  const b = profilesBlock && typeof profilesBlock === "object" && !Array.isArray(profilesBlock) ? (profilesBlock as Record<string, unknown>) : {};
  return {
    maxDecodeFitMape: finite(b.max_decode_fit_mape) ? b.max_decode_fit_mape : NARWHAL_FIT_LIMITS.maxDecodeFitMape,
    maxDecodeCvMape: finite(b.max_decode_cv_mape) ? b.max_decode_cv_mape : NARWHAL_FIT_LIMITS.maxDecodeCvMape,
  };
}

/** The row columns the limits read (a store row, or a gate's view of one). */
export interface FitEvidence {
  readonly iid: string;
  readonly decode_min_requests?: number | null;
  readonly decode_max_requests?: number | null;
  readonly decode_min_kv_tokens?: number | null;
  readonly decode_max_kv_tokens?: number | null;
  readonly decode_fit_mape?: number | null;
  readonly decode_cv_mape?: number | null;
}

/** One broken rule: the figure, its value and limit when it is a number over a limit, and Narwhal's message. */
export interface FitProblem {
  readonly figure: "decode_requests" | "decode_kv_tokens" | "decode_fit_mape" | "decode_cv_mape";
  readonly value: number | null;
  readonly limit: number | null;
  readonly message: string;
}

/**
 * Narwhal's `decode_evidence_problems`, rule for rule and message for message: a decode domain that is
 * a single point on either axis, a missing error figure, or one strictly above its limit (equal passes).
 */
export function fitProblems(row: FitEvidence, limits: FitLimits): FitProblem[] {
  const problems: FitProblem[] = [];
  if (row.decode_min_requests === row.decode_max_requests) {
    problems.push({ figure: "decode_requests", value: row.decode_min_requests ?? null, limit: null, message: `${row.iid} decode request domain is a single point (${row.decode_min_requests}); the sweep must span both axes independently` });
  }
  if (row.decode_min_kv_tokens === row.decode_max_kv_tokens) {
    problems.push({ figure: "decode_kv_tokens", value: row.decode_min_kv_tokens ?? null, limit: null, message: `${row.iid} decode KV token domain is a single point (${row.decode_min_kv_tokens}); the sweep must span both axes independently` });
  }
  const figures = [
    ["decode_fit_mape", row.decode_fit_mape, limits.maxDecodeFitMape],
    ["decode_cv_mape", row.decode_cv_mape, limits.maxDecodeCvMape],
  ] as const;
  for (const [figure, value, limit] of figures) {
    if (value == null) problems.push({ figure, value: null, limit, message: `${row.iid} carries no ${figure} evidence` });
    else if (value > limit) problems.push({ figure, value, limit, message: `${row.iid} ${figure} ${value.toFixed(4)} exceeds the profile-validation limit ${pyG(limit)}` });
  }
  return problems;
}

/**
 * Why a row from an earlier store is not adopted: it breaks the limits, so the gate would reject it.
 * One wording for the up (the Profile provider) and the preview's forecast; undefined when it passes.
 */
export function adoptionLimitReason(row: FitEvidence, limits: FitLimits, storePath: string): string | undefined {
  const problems = fitProblems(row, limits);
  return problems.length ? `the row of ${storePath} fails the preflight's profile limits: ${problems.map((p) => p.message).join("; ")}` : undefined;
}

/** What `check` says about limits given as an input: both positive and finite. */
export function fitLimitsProblem(v: unknown): string | undefined {
  const l = v as Partial<FitLimits> | null;
  if (!l || typeof l !== "object" || !finite(l.maxDecodeFitMape) || !finite(l.maxDecodeCvMape) || l.maxDecodeFitMape <= 0 || l.maxDecodeCvMape <= 0) {
    return `fitLimits must be {maxDecodeFitMape, maxDecodeCvMape}, both positive numbers (Narwhal's defaults are ${NARWHAL_FIT_LIMITS.maxDecodeFitMape} and ${NARWHAL_FIT_LIMITS.maxDecodeCvMape}), got ${JSON.stringify(v)}`;
  }
  return undefined;
}
