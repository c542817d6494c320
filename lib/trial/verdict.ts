/**
 * A point's verdict. An SLO miss is a capacity verdict only once the point reconciles; a point that does
 * not is `unreconciled` whatever its figures, never `pass`, and its reasons are the causes it can see.
 */
import type { Reconciliation, TrialSlo, TrialSummary, TrialVerdict } from "./types";

export function judgePoint(o: { summary: TrialSummary; reconciliation: Reconciliation; minGoodFraction: number; slo?: TrialSlo }): { verdict: TrialVerdict; reasons: string[] } {
  const { summary, reconciliation, minGoodFraction, slo } = o;
  if (reconciliation.status !== "reconciled") {
    const causes = reconciliation.causes.length ? reconciliation.causes : ["records disagree: reconciliation did not complete"];
    return { verdict: "unreconciled", reasons: causes };
  }
  const sent = summary.completed + summary.failed;
  const within = slo ? `TTFT <= ${slo.ttftS * 1000} ms and TPOT <= ${slo.tpotS * 1000} ms` : "the SLO";
  const figures = `${summary.good} of ${sent} requests within ${within} (good fraction ${summary.good_fraction.toFixed(4)}), ${summary.failed} failed; median TTFT ${summary.median_ttft_ms} ms, p99 TTFT ${summary.p99_ttft_ms} ms, median TPOT ${summary.median_tpot_ms} ms, p99 TPOT ${summary.p99_tpot_ms} ms`;
  if (summary.good_fraction < minGoodFraction) {
    return { verdict: "slo-miss", reasons: [`${figures}: below the required good fraction ${minGoodFraction}`] };
  }
  return { verdict: "pass", reasons: [`${figures}: at least the required good fraction ${minGoodFraction}`] };
}
