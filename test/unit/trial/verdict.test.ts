import { expect } from "chai";
import { DEFAULT_TOLERANCE } from "../../../lib/trial/reconcile";
import { judgePoint } from "../../../lib/trial/verdict";
import type { Reconciliation } from "../../../lib/trial/types";
import { summary } from "./fixtures";

const reconciled: Reconciliation = { status: "reconciled", causes: [], checks: [], tolerance: DEFAULT_TOLERANCE };
const figures = { completed: 98, failed: 2, good: 90, good_fraction: 0.9, median_ttft_ms: 120, p99_ttft_ms: 480, median_tpot_ms: 25, p99_tpot_ms: 41 };
const slo = { ttftS: 0.5, tpotS: 0.05 };

describe("trial verdict", () => {
  it("passes a reconciled point whose good fraction reaches the required one", () => {
    expect(judgePoint({ summary: summary(figures), reconciliation: reconciled, minGoodFraction: 0.9, slo })).to.deep.equal({
      verdict: "pass",
      reasons: ["90 of 100 requests within TTFT <= 500 ms and TPOT <= 50 ms (good fraction 0.9000), 2 failed; median TTFT 120 ms, p99 TTFT 480 ms, median TPOT 25 ms, p99 TPOT 41 ms: at least the required good fraction 0.9"],
    });
  });

  it("calls a reconciled point below the good fraction an SLO miss, naming the figures and the SLO", () => {
    expect(judgePoint({ summary: summary(figures), reconciliation: reconciled, minGoodFraction: 0.95, slo })).to.deep.equal({
      verdict: "slo-miss",
      reasons: ["90 of 100 requests within TTFT <= 500 ms and TPOT <= 50 ms (good fraction 0.9000), 2 failed; median TTFT 120 ms, p99 TTFT 480 ms, median TPOT 25 ms, p99 TPOT 41 ms: below the required good fraction 0.95"],
    });
  });

  it("never passes an unreconciled point, however good its figures, and gives its causes as reasons", () => {
    const unreconciled: Reconciliation = { ...reconciled, status: "unreconciled", causes: ["failed scrape: Prometheus target for engine d1 is down (up=0)"] };
    const perfect = summary({ ...figures, failed: 0, completed: 100, good: 100, good_fraction: 1 });
    expect(judgePoint({ summary: perfect, reconciliation: unreconciled, minGoodFraction: 0.9, slo })).to.deep.equal({
      verdict: "unreconciled",
      reasons: ["failed scrape: Prometheus target for engine d1 is down (up=0)"],
    });
    // Nor an SLO miss: the miss cannot be attributed to capacity.
    expect(judgePoint({ summary: summary(figures), reconciliation: unreconciled, minGoodFraction: 0.99, slo }).verdict).to.equal("unreconciled");
  });

  it("says the SLO without its bounds when none is given", () => {
    expect(judgePoint({ summary: summary(figures), reconciliation: reconciled, minGoodFraction: 0.95 }).reasons[0]).to.match(/^90 of 100 requests within the SLO \(good fraction 0\.9000\)/);
  });
});
