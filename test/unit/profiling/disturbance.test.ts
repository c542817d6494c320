import { expect } from "chai";
import { burstShare, disturbedByMachine, DISTURBED_BURST_SHARE } from "../../../lib/profiling/disturbance";
import { Cohort, DEFAULT_SWEEP, Profiler, type EngineClient, type Interval, type Reply, type Sweep } from "../../../lib/profiling";

/** Gaps of one stream: tokens 10 ms apart, or (bursty) pairs delivered together after a 40 ms stall. */
const gaps = (n: number, bursty: boolean): Interval[] => Array.from({ length: n }, (_, k) => [1, 100 + k, bursty ? (k % 2 ? 0 : 0.04) : 0.01]);

describe("profiling: decode cohorts the machine disturbed", () => {
  it("reads even gaps as undisturbed and held-back tokens delivered together as disturbed", () => {
    expect(burstShare(gaps(30, false))).to.equal(0);
    expect(burstShare(gaps(30, true))).to.equal(0.5);
    expect(burstShare([])).to.equal(0);
    expect(disturbedByMachine(gaps(30, false))).to.equal(false);
    expect(disturbedByMachine(gaps(30, true))).to.equal(true);
  });

  it("allows one burst in thirty (a quiet machine's worst cohorts) and not one in seven", () => {
    const withBursts = (bursts: number, n: number): Interval[] => gaps(n, false).map((g, k) => (k < bursts ? [g[0], g[1], 0] : g));
    expect(burstShare(withBursts(1, 30))).to.be.at.most(DISTURBED_BURST_SHARE);
    expect(disturbedByMachine(withBursts(1, 30))).to.equal(false);
    expect(disturbedByMachine(withBursts(1, 7))).to.equal(true);
  });

  describe("the decode sweep", () => {
    /** Answers /tokenize only: the cohorts themselves are scripted below. */
    const tokenizer: EngineClient = {
      label: "e0 at http://engine",
      get: async (): Promise<Reply> => ({ status: 404, body: "" }),
      post: async (_path: string, body: any): Promise<Reply> => ({ status: 200, body: JSON.stringify({ count: Math.ceil(body.prompt.length / 10), max_model_len: 4096, tokens: [] }) }),
      stream: async () => ({ status: 200 }),
      now: () => 0,
    };
    /** A profiler whose n-th cohort (warm-ups first) is bursty when `bursty(n)`. */
    class Scripted extends Profiler {
      calls = 0;
      constructor(
        private readonly bursty: (n: number) => boolean,
        resampleBudget?: number,
      ) {
        super(tokenizer, { iid: "e0", model: "m", sweep: DEFAULT_SWEEP, probeTimeoutS: 5, requestTimeoutS: 5, resampleBudget });
      }
      override async cohort(_prompt: string, input: number, size: number, tokens: number): Promise<Cohort> {
        const c = new Cohort(size, input, tokens);
        c.joined = size;
        c.intervals.push(...gaps(2 * size + 20, this.bursty(this.calls++)));
        return c;
      }
    }
    const sweep: Sweep = { ...DEFAULT_SWEEP, decodeInputLens: [256, 512], decodeConcurrency: [1, 2], decodeRepeats: 1 };
    const WARM_UPS = 2; // one cohort per concurrency at the first input length, never fitted

    it("measures a bursty cohort again, keeps it as evidence and fits the even one", async () => {
      const p = new Scripted((n) => n === WARM_UPS);
      await p.decodeSweep(sweep, 4096);
      expect(p.calls).to.equal(WARM_UPS + 4 + 1);
      expect(p.record.decode_resampled.map((r) => [r.concurrency, r.repeat, r.burst_share])).to.deep.equal([[1, 0, 0.5]]);
      expect(p.record.decode_resampled[0].intervals).to.have.length(22);
      for (const d of p.record.decode) expect(d[2]).to.be.closeTo(0.01, 1e-12);
      expect(p.record.decode).to.have.length(4);
      expect(p.record.decode_disturbed_kept).to.equal(0);
    });

    it("spends no more than the budget, then fits what it measured and counts it", async () => {
      const p = new Scripted(() => true, 2);
      await p.decodeSweep(sweep, 4096);
      expect(p.calls).to.equal(WARM_UPS + 4 + 2);
      expect(p.record.decode_resampled).to.have.length(2);
      expect(p.record.decode_disturbed_kept).to.equal(4);
      expect(p.record.decode).to.have.length(4);
    });
  });
});
