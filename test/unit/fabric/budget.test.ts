import { expect } from "chai";
import { layoutProblems, type CacheLayout } from "../../../lib/engine/cache-layout";
import {
  budgetFor,
  FIRST_TRIAL_BUDGET_INPUTS,
  VERDICT_EXIT_CODES,
  verdict,
  verdictDetail,
  type FabricBudget,
} from "../../../lib/fabric/budget";
import type { FabricError } from "../../../lib/fabric/errors";
import { GQA4_TP8, GQA_FP8_TP1, GQA_TP1, GQA_TP2, GQA_TP8, MHA_TP1, MLA_TP1, MLA_TP8 } from "./layouts";

function thrown(fn: () => unknown): FabricError {
  try {
    fn();
  } catch (err) {
    return err as FabricError;
  }
  throw new Error("expected an error");
}

/** Checks a hand-made layout against lib/engine's own invariants, so the hand numbers are consistent. */
function consistent(l: CacheLayout): string[] {
  const r = l.ranks[0];
  return layoutProblems(
    { blockSize: r.blockSize, numGpuBlocks: r.numGpuBlocks, cacheDtype: r.cacheDtype, labels: {} },
    { tensorParallelSize: l.tensorParallelSize, ranks: l.ranks, nixl: null },
    { blockSize: r.blockSize, tensorParallelSize: l.tensorParallelSize, dtype: r.dtype, kvCacheDtype: r.cacheDtype },
  );
}

describe("fabric budget", () => {
  it("uses the runbook's first-trial inputs by default", () => {
    expect(FIRST_TRIAL_BUDGET_INPUTS).to.deep.equal({ promptTokens: 1024, handoffRate: 1, burst: 1, budgetS: 1, headroom: 1.25 });
  });

  // payload = B/token (all layers, all ranks) × 1024; Gbit/s = 8 × payload × max(1, 1/1) × 1.25 / 1e9
  const table: Array<[string, CacheLayout, number, number, number]> = [
    // name, layout, bytes/token, payload bytes, required Gbit/s
    ["MHA 32 heads × 128 × 32 layers, bf16", MHA_TP1, 524288, 536870912, 5.36870912],
    ["GQA 8 heads, bf16", GQA_TP1, 131072, 134217728, 1.34217728],
    ["GQA 8 heads, fp8 KV (1 byte)", GQA_FP8_TP1, 65536, 67108864, 0.67108864],
    ["GQA 8 heads over TP 2 (4 heads per rank)", GQA_TP2, 131072, 134217728, 1.34217728],
    ["GQA 8 heads over TP 8 (1 head per rank)", GQA_TP8, 131072, 134217728, 1.34217728],
    ["4 heads over TP 8 (replicated on every rank)", GQA4_TP8, 131072, 134217728, 1.34217728],
    ["MLA (512 + 64) × 61 layers, bf16", MLA_TP1, 70272, 71958528, 0.71958528],
    ["MLA over TP 8 (latent on every rank)", MLA_TP8, 562176, 575668224, 5.75668224],
  ];
  for (const [name, l, perToken, payload, gbps] of table) {
    it(`${name}: ${perToken} B/token, ${payload} B payload, ${gbps} Gbit/s`, () => {
      expect(consistent(l)).to.deep.equal([]);
      const b = budgetFor(l);
      expect(b.bytesPerToken).to.equal(perToken);
      expect(b.payloadBytes).to.equal(payload);
      expect(b.handoffsPerSecond).to.equal(1);
      expect(b.requiredGbps).to.equal(gbps);
    });
  }

  it("splits heads across TP ranks, and the ranks add up to the single-rank total", () => {
    expect(budgetFor(GQA_TP2).bytesPerTokenPerRank).to.deep.equal([65536, 65536]);
    expect(budgetFor(GQA_TP8).bytesPerTokenPerRank).to.deep.equal(Array(8).fill(16384));
    expect(budgetFor(GQA_TP2).bytesPerToken).to.equal(budgetFor(GQA_TP1).bytesPerToken);
    expect(budgetFor(GQA_TP8).bytesPerToken).to.equal(budgetFor(GQA_TP1).bytesPerToken);
    // Fewer heads than ranks: each rank keeps one head, so the ranks hold twice the model's 65536 B/token.
    expect(budgetFor(GQA4_TP8).bytesPerToken).to.equal(2 * 65536);
  });

  it("takes the larger of the handoff rate and burst / budget seconds", () => {
    // max(4, 16 / 2) = 8 handoffs/s: 8 × 134217728 × 8 × 1.25 / 1e9
    const burst = budgetFor(GQA_TP1, { promptTokens: 1024, handoffRate: 4, burst: 16, budgetS: 2, headroom: 1.25 });
    expect(burst.handoffsPerSecond).to.equal(8);
    expect(burst.requiredGbps).to.equal(10.73741824);
    // max(2, 1 / 1) = 2, 4096 tokens: 8 × 536870912 × 2 × 1 / 1e9
    const rate = budgetFor(GQA_TP1, { promptTokens: 4096, handoffRate: 2, burst: 1, budgetS: 1, headroom: 1 });
    expect(rate.payloadBytes).to.equal(536870912);
    expect(rate.requiredGbps).to.equal(8.589934592);
  });

  it("keeps exactly the five inputs, so unrelated fabric settings do not move the budget", () => {
    const spec = { ...FIRST_TRIAL_BUDGET_INPUTS, interface: "fab0", iperfPort: 5201, durationS: 2 };
    expect(budgetFor(GQA_TP1, spec)).to.deep.equal(budgetFor(GQA_TP1));
    expect(budgetFor(GQA_TP1, spec).inputs).to.deep.equal(FIRST_TRIAL_BUDGET_INPUTS);
  });

  it("writes the formula with its numbers for the evidence record", () => {
    expect(budgetFor(GQA_TP2).formula).to.equal(
      "required Gbit/s = 8 × payload × max(handoffRate, burst / budgetS) × headroom / 1e9" +
        " = 8 × 134217728 B × max(1/s, 1 / 1 s) × 1.25 / 1e9 = 1.34217728 Gbit/s;" +
        " payload = 131072 B/token (2 ranks × 65536 B/token over 32 layers) × 1024 prompt tokens = 134217728 B",
    );
    expect(budgetFor(MLA_TP1).formula).to.contain("payload = 70272 B/token (70272 B/token over 61 layers, 1 rank) × 1024 prompt tokens = 71958528 B");
  });

  it("refuses inputs out of range, naming every one", () => {
    const e = thrown(() => budgetFor(GQA_TP1, { promptTokens: 0, handoffRate: -1, burst: 1.5, budgetS: 0, headroom: 0.9 }));
    expect(e.code).to.equal("NARWHAL_FABRIC_BUDGET_INPUT");
    expect(e.message).to.equal(
      "the fabric budget inputs are out of range: fabric.promptTokens 0 (a positive integer), fabric.handoffRate -1 (handoffs per second, above 0), " +
        "fabric.burst 1.5 (a positive integer), fabric.budgetS 0 (seconds, above 0), fabric.headroom 0.9 (at least 1); fix them in the stack's fabric section",
    );
    expect(thrown(() => budgetFor(GQA_TP1, { ...FIRST_TRIAL_BUDGET_INPUTS, handoffRate: Number.NaN })).message).to.contain("fabric.handoffRate null");
  });

  it("refuses a layout whose total is not the sum of its ranks, or that lacks ranks", () => {
    const wrong = thrown(() => budgetFor({ ...GQA_TP2, bytesPerTokenAllRanks: 65536 }));
    expect(wrong.code).to.equal("NARWHAL_FABRIC_BUDGET_LAYOUT");
    expect(wrong.message).to.equal(
      "the captured cache layout cannot give a fabric payload: bytesPerTokenAllRanks is 65536, but its ranks add up to 131072; recapture the engine's cache",
    );
    expect(thrown(() => budgetFor({ tensorParallelSize: 2, ranks: [GQA_TP2.ranks[0]], bytesPerTokenAllRanks: 65536 })).message).to.equal(
      "the captured cache layout cannot give a fabric payload: it has 1 rank(s) for tensor parallel size 2; recapture the engine's cache",
    );
    expect(thrown(() => budgetFor({ tensorParallelSize: 1, ranks: [], bytesPerTokenAllRanks: 0 })).message).to.contain("it has no ranks");
  });
});

describe("fabric verdict", () => {
  const budget: Pick<FabricBudget, "requiredGbps"> = { requiredGbps: 1.34217728 };

  it("is met at or above the budget and below under it", () => {
    expect(verdict(1.34217728, budget)).to.equal("met");
    expect(verdict(30, budget)).to.equal("met");
    expect(verdict({ gbps: 1.3421772, samples: [1.3, 1.38] }, budget)).to.equal("below");
    expect(verdictDetail(2, budget)).to.deep.equal({
      verdict: "met",
      reason: "measured 2 Gbit/s meets the required 1.34217728 Gbit/s",
      measuredGbps: 2,
      requiredGbps: 1.34217728,
      marginGbps: 2 - 1.34217728,
    });
    expect(verdictDetail({ gbps: 1, samples: 3 }, budget).reason).to.equal("measured 1 Gbit/s is below the required 1.34217728 Gbit/s");
  });

  it("is invalid for a missing, NaN, infinite, zero or negative measurement, or zero samples", () => {
    const cases: Array<[Parameters<typeof verdict>[0], string]> = [
      [null, "no measurement was recorded"],
      [undefined, "no measurement was recorded"],
      [{ gbps: null, samples: 2 }, "no measurement was recorded"],
      [Number.NaN, "the measurement is not a number (NaN)"],
      [Number.POSITIVE_INFINITY, "the measurement is Infinity Gbit/s, not finite"],
      [0, "the measurement is 0 Gbit/s; a working link measures above 0"],
      [-3, "the measurement is -3 Gbit/s; a working link measures above 0"],
      [{ gbps: 20, samples: 0 }, "the measurement has 0 samples"],
      [{ gbps: 20, samples: [] }, "the measurement has 0 samples"],
      [{ gbps: 20, samples: [19, Number.NaN] }, "a sample of the measurement is not a finite number"],
    ];
    for (const [m, reason] of cases) {
      const d = verdictDetail(m, budget);
      expect(d.verdict, JSON.stringify(m)).to.equal("invalid");
      expect(d.reason).to.equal(reason);
      expect(d.marginGbps).to.equal(null);
      expect(verdict(m, budget)).to.equal("invalid");
    }
  });

  it("is invalid against a budget that is not a positive number", () => {
    expect(verdictDetail(10, { requiredGbps: Number.NaN }).reason).to.equal("the budget is null Gbit/s, not a positive number; recompute the budget");
    expect(verdict(10, { requiredGbps: 0 })).to.equal("invalid");
  });

  it("maps to record-edge's exit codes", () => {
    expect(VERDICT_EXIT_CODES).to.deep.equal({ met: 0, below: 1, invalid: 2 });
  });

  it("is recomputed, not re-measured, when the budget moves", () => {
    const measured = { gbps: 3, samples: [3.1, 2.9] };
    expect(verdict(measured, budgetFor(GQA_TP1))).to.equal("met");
    expect(verdict(measured, budgetFor(GQA_TP1, { ...FIRST_TRIAL_BUDGET_INPUTS, promptTokens: 4096 }))).to.equal("below");
  });
});
