/**
 * Gate G's capacity trial in the deployment record. A `load-trial` record's step is judged by the trial's
 * own verdict (its observations, a `TrialObservations`): `pass` passes; `slo-miss` and `unreconciled` fail
 * with their reasons and reconciliation causes, so Gate G cannot pass while a point does not. A record
 * whose observations carry no verdict is invalid evidence, never a pass.
 */
import type { EvidenceVerdict } from "./record";

/** The kind each trial point's record is stored under. */
export const LOAD_TRIAL_KIND = "load-trial";

/** What the deployment record keeps of a trial point beside the step's verdict. */
export interface TrialStepSummary {
  point: string;
  /** Requests per second offered; null when the record does not say. */
  offeredRate: number | null;
  /** `pass`, `slo-miss`, `unreconciled`, or `missing` when the record carries none. */
  verdict: string;
}

const TRIAL_VERDICTS: Record<string, EvidenceVerdict["status"]> = { pass: "pass", "slo-miss": "fail", unreconciled: "fail" };
const SEVERITY: Record<EvidenceVerdict["status"], number> = { info: 0, pass: 1, fail: 2, invalid: 3 };

const obj = (v: unknown): Record<string, unknown> | undefined => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

/**
 * The step verdict of a trial point: the trial's verdict mapped, or the record's own when that is worse
 * (a provider that failed the record for another reason is not overruled), with both sets of reasons.
 */
export function trialStep(subjectAlias: string, observations: unknown, own: EvidenceVerdict): { verdict: EvidenceVerdict; trial: TrialStepSummary } {
  const o = obj(observations);
  const point = obj(o?.point);
  const id = typeof point?.id === "string" ? point.id : subjectAlias;
  const rate = typeof point?.rate === "number" && Number.isFinite(point.rate) ? point.rate : null;
  const said = typeof o?.verdict === "string" ? o.verdict : undefined;
  const mapped = said !== undefined ? TRIAL_VERDICTS[said] : undefined;
  const reasons: string[] = [];
  const add = (r: string) => {
    if (!reasons.includes(r)) reasons.push(r);
  };
  if (mapped === undefined) add(said === undefined ? `trial point ${id}: the record carries no trial verdict (observations.verdict)` : `trial point ${id}: unknown trial verdict ${JSON.stringify(said)}`);
  else if (mapped !== "pass") {
    add(`trial point ${id}: ${said}`);
    strings(o?.reasons).forEach(add);
    strings(obj(o?.reconciliation)?.causes).forEach(add);
  }
  const status = mapped ?? "invalid";
  const worse = SEVERITY[own.status] > SEVERITY[status] ? own.status : status;
  if (worse !== "pass") own.reasons.forEach(add);
  return { verdict: { status: worse, reasons }, trial: { point: id, offeredRate: rate, verdict: mapped === undefined ? "missing" : said! } };
}
