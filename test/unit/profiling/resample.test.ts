/**
 * Re-sampling decides on the machine's reading alone: a disturbed sample is taken again up to its cap
 * and within its phase's budget, an undisturbed one never, the least late take is kept whatever latency
 * it measured, and the counts the summary and messages give are exact. A fake gauge hands out readings.
 */
import { expect } from "chai";
import type { ContentionGauge, ContentionReading } from "../../../lib/profiling/contention";
import { asJudged, DISTURBED_LATENESS, resampleBrief, Resampler, RETAKES_PER_SAMPLE, summarize, type ResampleSummary } from "../../../lib/profiling/resample";

/** A gauge whose n-th reading has the n-th lateness (and pressure) of the script. */
function scripted(lateness: number[], pressure: Array<number | null> = lateness.map(() => 0.7)): ContentionGauge & { used: number } {
  const g = {
    pressure: pressure.some((p) => p !== null),
    used: 0,
    begin() {
      const i = g.used++;
      if (i >= lateness.length) throw new Error(`reading ${i + 1} was not scripted`);
      return (): ContentionReading => ({ wallS: 0.1, lateS: lateness[i] * 0.1, lateness: lateness[i], pressure: pressure[i] });
    },
  };
  return g;
}

/** A sample that returns the latency of its n-th take (so a test can see which take was kept). */
const takes = (values: number[]) => {
  let n = 0;
  return { sample: async () => values[n++], get count() { return n; } };
};

describe("profiling: re-sampling what the machine disturbed", () => {
  it("never re-takes an undisturbed sample, the threshold itself included", async () => {
    const gauge = scripted([0, 0.05, DISTURBED_LATENESS]);
    const r = new Resampler(gauge, { budget: 10 });
    for (const v of [1, 2, 3]) expect(await r.take(`p${v}`, async () => v)).to.equal(v);
    const s = r.summary();
    expect([gauge.used, s.retaken, s.disturbed, s.samples, s.points]).to.deep.equal([3, 0, 0, 3, []]);
  });

  it("re-takes a disturbed sample until a take is undisturbed, and keeps that take", async () => {
    const gauge = scripted([0.4, 0.3, 0.02]);
    const r = new Resampler(gauge, { budget: 10 });
    const t = takes([0.051, 0.048, 0.031]);
    expect(await r.take("decode isl=512 c=4 #1", t.sample)).to.equal(0.031);
    expect(t.count).to.equal(3);
    const s = r.summary();
    expect(s).to.deep.include({ samples: 1, disturbed: 1, retaken: 2, keptDisturbed: 0, peakLateness: 0.4 });
    expect(s.points).to.deep.equal([{ point: "decode isl=512 c=4 #1", lateness: [0.4, 0.3, 0.02], pressure: [0.7, 0.7, 0.7], kept: 2 }]);
  });

  it("records a lateness just over the threshold above it, and one at the threshold at it, so the evidence reads as it was judged", async () => {
    const gauge = scripted([DISTURBED_LATENESS + 4e-5, DISTURBED_LATENESS]);
    const r = new Resampler(gauge, { budget: 10 });
    await r.take("prefill 256 #1", async () => 1);
    const s = r.summary();
    expect(s.points[0].lateness).to.deep.equal([0.1001, 0.1]);
    expect(s.peakLateness).to.be.above(s.threshold);
    expect([asJudged(0.123456, 0.1), asJudged(0.09996, 0.09997), asJudged(0.0, 0.1)]).to.deep.equal([0.1235, 0.09997, 0]);
  });

  it("takes one sample at most 1 + RETAKES_PER_SAMPLE times and keeps the least late take, not the fastest", async () => {
    const gauge = scripted([0.5, 0.2, 0.6, 0.9]);
    const r = new Resampler(gauge, { budget: 10 });
    const t = takes([0.010, 0.030, 0.005]);
    // The second take was the least late: its (slowest) latency is kept.
    expect(await r.take("prefill 256 #1", t.sample)).to.equal(0.03);
    expect(t.count).to.equal(1 + RETAKES_PER_SAMPLE);
    expect(r.summary()).to.deep.include({ retaken: RETAKES_PER_SAMPLE, keptDisturbed: 1, disturbed: 1 });
  });

  it("spends at most its budget: a spent phase keeps disturbed samples as taken", async () => {
    const gauge = scripted(new Array(20).fill(0.5));
    const r = new Resampler(gauge, { budget: 3 });
    for (let i = 0; i < 4; i++) await r.take(`p${i}`, async () => i);
    const s = r.summary();
    // Two re-takes for p0, one for p1, none left for p2 and p3: 4 samples, 7 takes.
    expect([gauge.used, s.retaken, s.spent, s.samples, s.disturbed, s.keptDisturbed]).to.deep.equal([7, 3, true, 4, 4, 4]);
    expect(s.points.map((p) => [p.point, p.lateness.length])).to.deep.equal([
      ["p0", 3],
      ["p1", 2],
    ]);
  });

  it("a sweep's summary adds its phases' counts and budgets; one phase cannot spend another's", async () => {
    const gauge = scripted([0.5, 0.5, 0.5, 0.5, 0.01, 0.3, 0.02], [0.9, 0.8, 0.95, 0.7, 0.4, null, 0.5]);
    const prefill = new Resampler(gauge, { budget: 2 });
    const decode = new Resampler(gauge, { budget: 2 });
    await prefill.take("prefill 256 #1", async () => 1); // 0.5, 0.5, 0.5: spends prefill's two
    await prefill.take("prefill 256 #2", async () => 2); // 0.5: none left
    await decode.take("decode isl=512 c=1 #1", async () => 3); // 0.01
    await decode.take("decode isl=512 c=4 #1", async () => 4); // 0.3, 0.02
    const s: ResampleSummary = summarize(DISTURBED_LATENESS, [prefill, decode]);
    expect(s).to.deep.include({ budget: 4, spent: true, samples: 4, disturbed: 3, retaken: 3, keptDisturbed: 2, peakLateness: 0.5, peakPressure: 0.95 });
    expect(s.meanLateness).to.be.closeTo((0.5 * 4 + 0.01 + 0.3 + 0.02) / 7, 1e-4);
    // The reading without PSI is left out of the pressure's mean, not counted as none.
    expect(s.meanPressure).to.be.closeTo((0.9 + 0.8 + 0.95 + 0.7 + 0.4 + 0.5) / 6, 1e-4);
    expect(s.points.map((p) => p.point)).to.deep.equal(["prefill 256 #1", "decode isl=512 c=4 #1"]);
  });

  it("a sample that fails is not re-taken: its error is the sweep's", async () => {
    const gauge = scripted([0.9, 0.9]);
    const r = new Resampler(gauge, { budget: 5 });
    const stop = new Error("decode probe returned malformed SSE");
    expect(await r.take("decode", async () => Promise.reject(stop)).catch((e) => e)).to.equal(stop);
    expect(r.summary()).to.deep.include({ retaken: 0, samples: 0 });
  });

  it("says how many samples were re-taken and why, with the machine's figures", () => {
    const base = { threshold: 0.1, budget: 15, spent: false, samples: 15, disturbed: 4, retaken: 5, keptDisturbed: 0, peakLateness: 0.2412, meanLateness: 0.061, peakPressure: 1, meanPressure: 0.8412, points: [] };
    expect(resampleBrief(base)).to.equal("5 samples re-taken (the profiler's timers late up to 24% of a sample's time, mean 6%; CPU pressure up to 100%, mean 84%; budget 15)");
    expect(resampleBrief({ ...base, retaken: 15, spent: true, keptDisturbed: 2, peakPressure: null, meanPressure: null })).to.equal(
      "15 samples re-taken (the profiler's timers late up to 24% of a sample's time, mean 6%, 2 kept over the threshold 10%; budget 15, spent)",
    );
    expect(resampleBrief({ ...base, retaken: 1 })).to.match(/^1 sample re-taken \(/);
    expect(resampleBrief({ ...base, retaken: 0, disturbed: 0, peakLateness: 0.04, meanLateness: 0.01 })).to.equal(
      "no sample re-taken (the profiler's timers late up to 4% of a sample's time, mean 1%, threshold 10%; CPU pressure up to 100%, mean 84%)",
    );
  });

  describe("a sample the engine shared with another client", () => {
    /** A witness whose n-th sample saw the n-th count of foreign requests; each quiet wait takes 250 ms, logged between samples. */
    const witnessing = (foreign: number[]) => {
      let n = 0;
      const log: string[] = [];
      const traffic = {
        begin: async () => { const i = n++; log.push(`take ${i}`); return async () => foreign[i]; },
        quiet: async () => (log.push("quiet"), 250),
      };
      return { traffic, log, get used() { return n; } };
    };

    it("re-takes it like a disturbed one, and keeps the take the engine had to itself before a less late one", async () => {
      const w = witnessing([1, 0]);
      const r = new Resampler(scripted([0, 0.05]), { budget: 10, traffic: w.traffic });
      const t = takes([0.05, 0.04]);
      // The second take is later (0.05) but alone on the engine: it is kept.
      expect(await r.take("prefill 512 #1", t.sample)).to.equal(0.04);
      const s = r.summary();
      expect(s).to.deep.include({ samples: 1, retaken: 1, shared: 1, keptShared: 0, foreignRequests: 1, disturbed: 0, keptDisturbed: 0 });
      expect(s.points).to.deep.equal([{ point: "prefill 512 #1", lateness: [0, 0.05], pressure: [0.7, 0.7], foreign: [1, 0], kept: 1 }]);
      expect(resampleBrief(s)).to.match(/1 shared the engine with other requests; budget 10\)$/);
      expect(w.log, "the re-take waits for the engine to serve nobody else").to.deep.equal(["take 0", "quiet", "take 1"]);
      expect(s.quietWaitS).to.equal(0.3);
    });

    it("waits for quiet only before re-taking a shared sample, not one the machine made late", async () => {
      const w = witnessing([0, 0]);
      const r = new Resampler(scripted([0.5, 0]), { budget: 10, traffic: w.traffic });
      await r.take("prefill 512 #1", takes([1, 2]).sample);
      expect(w.log).to.deep.equal(["take 0", "take 1"]);
      expect(r.summary()).to.deep.include({ retaken: 1, quietWaitS: 0 });
    });

    it("keeps a shared take once the re-takes run out, and counts it", async () => {
      const w = witnessing([2, 3, 1]);
      const r = new Resampler(scripted([0, 0, 0]), { budget: 10, traffic: w.traffic });
      await r.take("decode isl=256 c=1 #1", takes([1, 2, 3]).sample);
      expect(w.used).to.equal(1 + RETAKES_PER_SAMPLE);
      // No wait after the last take: nothing is taken after it.
      expect(w.log.filter((x) => x === "quiet")).to.have.length(RETAKES_PER_SAMPLE);
      expect(r.summary()).to.deep.include({ shared: 1, keptShared: 1, foreignRequests: 6 });
      expect(resampleBrief(r.summary())).to.contain("1 shared the engine with other requests, 1 kept so");
    });

    it("says nothing of traffic without a witness", async () => {
      const r = new Resampler(scripted([0]), { budget: 1 });
      await r.take("p", async () => 1);
      expect(r.summary()).to.not.have.any.keys("shared", "keptShared", "foreignRequests", "quietWaitS");
    });
  });
});
