/**
 * Gate G's capacity trial as the report draws it: one `load-trial` record per point, its observations
 * a `TrialObservations` (lib/trial/types.ts). Seconds become milliseconds here, so every figure on the
 * page reads in the unit of `vllm bench serve`'s summary. A record without an offered rate cannot be
 * placed on the charts and is listed instead.
 */
import { num, obj, str } from "./guards";
import { provenance } from "./provenance";
import type { Chosen } from "./select";
import type { CapacityView, InvalidEvidence, TrialPointView } from "./types";

const ms = (seconds: number | null): number | null => (seconds === null ? null : seconds * 1000);

function curveOf(v: unknown): TrialPointView["curve"] {
  if (!Array.isArray(v)) return [];
  const out: Array<{ rate: number; ttftMs: number; tpotMs: number }> = [];
  for (const raw of v) {
    const p = obj(raw);
    const rate = num(p?.rate);
    const ttft = num(p?.ttftS);
    const tpot = num(p?.tpotS);
    if (rate !== null && ttft !== null && tpot !== null) out.push({ rate, ttftMs: ttft * 1000, tpotMs: tpot * 1000 });
  }
  return out.sort((a, b) => a.rate - b.rate);
}

function pointView(c: Chosen): TrialPointView | InvalidEvidence {
  const o = obj(c.stored.record.observations);
  const point = obj(o?.point);
  const rate = num(point?.rate);
  if (rate === null) return { relativePath: c.stored.relativePath, reason: "its observations carry no point.rate, so it cannot be placed against offered rate" };
  const s = obj(o?.summary);
  const prediction = obj(o?.prediction);
  const departure = obj(o?.departure);
  const slo = obj(o?.slo);
  const predictedTtft = num(prediction?.ttftS);
  const predictedTpot = num(prediction?.tpotS);
  const dep = { ttft: num(departure?.ttft), tpot: num(departure?.tpot), bound: num(departure?.bound), flagged: departure?.flagged };
  const sloTtft = num(slo?.ttftS);
  const sloTpot = num(slo?.tpotS);
  const strings = (v: unknown) => (Array.isArray(v) ? v.map(str).filter((x): x is string => x !== null) : []);
  const reasons = strings(o?.reasons);
  for (const cause of strings(obj(o?.reconciliation)?.causes)) if (!reasons.includes(cause)) reasons.push(cause);
  return {
    pointId: str(point?.id) ?? c.stored.record.subject.alias,
    provenance: provenance(c),
    offeredRate: rate,
    requests: num(point?.requests),
    achievedRate: num(s?.achieved_send_rate),
    throughput: num(s?.request_throughput),
    p50TtftMs: num(s?.p50_ttft_ms) ?? num(s?.median_ttft_ms),
    p99TtftMs: num(s?.p99_ttft_ms),
    p50TpotMs: num(s?.p50_tpot_ms) ?? num(s?.median_tpot_ms),
    goodFraction: num(s?.good_fraction),
    errors: num(s?.failed),
    predicted: predictedTtft !== null && predictedTpot !== null ? { ttftMs: predictedTtft * 1000, tpotMs: predictedTpot * 1000 } : null,
    departure: dep.ttft !== null && dep.tpot !== null && dep.bound !== null && typeof dep.flagged === "boolean" ? { ttft: dep.ttft, tpot: dep.tpot, bound: dep.bound, flagged: dep.flagged } : null,
    slo: sloTtft !== null && sloTpot !== null ? { ttftMs: ms(sloTtft)!, tpotMs: ms(sloTpot)! } : null,
    curve: curveOf(o?.predictedCurve),
    // A record that does not say `pass` is never drawn as one.
    verdict: str(o?.verdict) ?? "no verdict",
    reasons,
  };
}

/** The points of the chosen `load-trial` records, by offered rate then id. */
export function capacityView(chosen: readonly Chosen[]): CapacityView {
  const points: TrialPointView[] = [];
  const unreadable: InvalidEvidence[] = [];
  for (const c of chosen) {
    const v = pointView(c);
    if ("pointId" in v) points.push(v);
    else unreadable.push(v);
  }
  points.sort((a, b) => a.offeredRate - b.offeredRate || (a.pointId < b.pointId ? -1 : a.pointId > b.pointId ? 1 : 0));
  return { points, unreadable };
}
