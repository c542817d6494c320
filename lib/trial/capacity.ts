/** The `capacity` stack output: each point's verdict and headline figures, as a consumer stack reads them. */
import type { Departure, Prediction, TrialPoint, TrialSummary, TrialVerdict } from "./types";

export interface CapacityPoint {
  verdict: TrialVerdict;
  reasons: string[];
  offeredRate: number;
  achievedRate: number;
  requests: number;
  p50TtftMs: number;
  p99TtftMs: number;
  p50TpotMs: number;
  p99TpotMs: number;
  goodFraction: number;
  errors: number;
  predictedTtftMs: number;
  predictedTpotMs: number;
  departs: boolean;
  evidence: { relativePath: string; digest: string };
}

const ms = (s: number) => Math.round(s * 1e6) / 1e3;

export function capacityPoint(p: { point: TrialPoint; verdict: TrialVerdict; reasons: string[]; summary: TrialSummary; prediction: Prediction; departure: Departure; evidence: { relativePath: string; digest: string } }): CapacityPoint {
  const s = p.summary;
  return {
    verdict: p.verdict,
    reasons: p.reasons,
    offeredRate: p.point.rate,
    achievedRate: s.achieved_send_rate,
    requests: p.point.requests,
    p50TtftMs: s.p50_ttft_ms,
    p99TtftMs: s.p99_ttft_ms,
    p50TpotMs: s.p50_tpot_ms,
    p99TpotMs: s.p99_tpot_ms,
    goodFraction: s.good_fraction,
    errors: s.failed,
    predictedTtftMs: ms(p.prediction.ttftS),
    predictedTpotMs: ms(p.prediction.tpotS),
    departs: p.departure.flagged,
    evidence: p.evidence,
  };
}
