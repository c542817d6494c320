/**
 * First-token calibration on fixed data: nearest-rank p99, max(observed maximum, 1.2 × p99) + 0.5 s per
 * group, a deadline strictly above the largest group, the client TTFT check, the 100-sample minimum,
 * default input lengths up to the longest admitted input, and a run that keeps every failed attempt
 * and stops a failing group for diagnosis.
 */
import { expect } from "chai";
import { calibrate, clientTtftFit, groupCandidate, nearestRank, observationBoundProblem, type CalibrationGroup } from "../../../lib/preflight/calibration";
import { defaultInputLengths, proposeDeadline, runCalibration, type SampleRecord } from "../../../lib/preflight/calibration-run";
import { roundRobin } from "../../../lib/preflight/schedule";
import type { Pair } from "../../../lib/preflight/pairs";

/** 1..n hundredths of a second: 0.01, 0.02, … */
const ramp = (n: number, scale = 0.01) => Array.from({ length: n }, (_, i) => (i + 1) * scale);

const group = (producer: string, consumer: string, inputTokens: number, firstTokenSeconds: number[], prefillSeconds = firstTokenSeconds.map(() => 0.2)): CalibrationGroup => ({
  producer,
  consumer,
  inputTokens,
  firstTokenSeconds,
  prefillSeconds,
  failures: [],
});

describe("unit: first-token calibration formula", () => {
  it("takes the nearest-rank percentile: the smallest sample with at least q of them at or below it", () => {
    expect(nearestRank(ramp(100), 0.99)).to.be.closeTo(0.99, 1e-12);
    expect(nearestRank(ramp(200), 0.99)).to.be.closeTo(1.98, 1e-12);
    // 101 samples: ceil(0.99 × 101) = 100, the 100th smallest.
    expect(nearestRank(ramp(101), 0.99)).to.be.closeTo(1.0, 1e-12);
    expect(nearestRank([5, 1, 3], 0.5)).to.equal(3);
    expect(() => nearestRank([], 0.99)).to.throw(/no samples/);
  });

  it("uses 1.2 × p99 when it exceeds the observed maximum, else the maximum, plus 0.5 s", () => {
    // Tight tail: max 1.00, p99 0.99 → 1.2 × 0.99 = 1.188 wins.
    const tight = groupCandidate(group("a", "b", 128, ramp(100)));
    expect(tight.max).to.be.closeTo(1.0, 1e-12);
    expect(tight.p99).to.be.closeTo(0.99, 1e-12);
    expect(tight.candidate).to.be.closeTo(1.188 + 0.5, 1e-12);
    // One outlier above 1.2 × p99: the maximum wins.
    const outlier = groupCandidate(group("a", "b", 128, [...ramp(99), 3.0]));
    expect(outlier.p99).to.be.closeTo(0.99, 1e-12);
    expect(outlier.candidate).to.be.closeTo(3.5, 1e-12);
  });

  it("refuses a group with fewer than 100 completed samples, naming path and input length", () => {
    expect(() => groupCandidate(group("e0", "e1", 4096, ramp(99)))).to.throw("calibration e0 -> e1 at 4096 tokens: 99 completed samples, at least 100 required");
  });

  it("sets the deadline strictly above the largest group and checks deadline + prefill + overhead against the client TTFT", () => {
    const groups = [group("e0", "e1", 128, ramp(100)), group("e1", "e0", 128, [...ramp(99), 3.0]), group("e0", "e1", 8191, ramp(100, 0.02), ramp(100, 0.01))];
    const r = calibrate(groups, { routerOverheadS: 0.05, clientTtftS: 5 });
    // Largest: e1 -> e0 at 3.5 s exactly; the deadline goes one tenth above it.
    expect(r.floor).to.be.closeTo(3.5, 1e-12);
    expect(r.deadline).to.equal(3.6);
    expect(r.prefillS).to.be.closeTo(1.0, 1e-12);
    expect(r.clientTtft).to.be.closeTo(3.6 + 1.0 + 0.05, 1e-12);
    expect(r.fitsClientTtft).to.equal(true);
    expect(r.groups.map((g) => [g.producer, g.consumer, g.inputTokens, g.samples])).to.deep.equal([
      ["e0", "e1", 128, 100],
      ["e1", "e0", 128, 100],
      ["e0", "e1", 8191, 100],
    ]);
    expect(calibrate(groups, { routerOverheadS: 0.05, clientTtftS: 4.6 }).fitsClientTtft).to.equal(false);
    expect(clientTtftFit(3.6, 1.0, 0.05, 4.65).fitsClientTtft).to.equal(true);
    expect(calibrate([group("a", "b", 1, Array(100).fill(1.53))], { routerOverheadS: 0, clientTtftS: 10 }).deadline).to.equal(2.4); // 1.2 × 1.53 + 0.5 = 2.336
  });

  it("keeps the observation bound above the deadline and within the request timeout", () => {
    expect(observationBoundProblem(2.5, 2.5, 600)).to.match(/must exceed engine.first_token_timeout_s 2.5s/);
    expect(observationBoundProblem(601, 2.5, 600)).to.match(/within serving.request_timeout_s 600s/);
    expect(observationBoundProblem(10, 2.5, 600)).to.equal(undefined);
  });

  it("spans the served context up to the longest admitted input", () => {
    expect(defaultInputLengths(16384)).to.deep.equal([128, 4096, 8192, 16383]);
    expect(defaultInputLengths(100)).to.deep.equal([25, 50, 99]);
    expect(() => defaultInputLengths(1)).to.throw(/admits no input/);
  });
});

describe("unit: the calibration run", () => {
  const paths: Pair[] = [
    { producer: "e0", consumer: "e1" },
    { producer: "e1", consumer: "e0" },
    { producer: "e0", consumer: "e2" },
    { producer: "e2", consumer: "e1" },
  ];

  /** A sampler that fails the listed attempts of a path and otherwise answers in 0.1 s + 1 ms per attempt; it checks no engine runs two samples at once. */
  function sampler(failing: (p: Pair, attempt: number, n: number) => SampleRecord["failure"] | undefined) {
    const busy = new Set<string>();
    const calls: Array<{ p: Pair; n: number; attempt: number }> = [];
    return {
      calls,
      async sample(p: Pair, n: number, attempt: number): Promise<SampleRecord> {
        for (const id of [p.producer, p.consumer]) {
          if (busy.has(id)) throw new Error(`${id} has two samples in flight`);
          busy.add(id);
        }
        calls.push({ p, n, attempt });
        await new Promise((r) => setImmediate(r));
        busy.delete(p.producer);
        busy.delete(p.consumer);
        const failure = failing(p, attempt, n);
        const base = { producer: p.producer, consumer: p.consumer, inputTokens: n, attempt, at: "t" };
        if (failure) return { ...base, status: "failed", promptTokens: n, prefillSeconds: 0.1, firstTokenSeconds: null, failure, error: "expired after 10 s" };
        return { ...base, status: "completed", promptTokens: n, prefillSeconds: 0.05, firstTokenSeconds: 0.1 + attempt / 1000 };
      },
    };
  }

  it("collects the samples of every path and length, retries failures, keeps every failed attempt, and never doubles up an engine", async () => {
    const s = sampler((p, attempt) => (p.producer === "e1" && attempt % 10 === 3 ? "observation_expired" : undefined));
    const run = await runCalibration({ paths, inputLengths: [64, 4095], samplesPerGroup: 100, maxFailuresPerGroup: 20, schedule: "concurrent" }, s);
    expect(run.incomplete).to.deep.equal([]);
    expect(run.groups).to.have.length(8);
    for (const g of run.groups) expect(g.firstTokenSeconds, `${g.producer}->${g.consumer}@${g.inputTokens}`).to.have.length(100);
    const e1e0 = run.groups.find((g) => g.producer === "e1" && g.inputTokens === 4095)!;
    // Attempts 3, 13, … 93 and 103 fail, batches bounded by the failure allowance: 111 attempts, 11 failures, all kept.
    expect(e1e0.failures).to.have.length(11);
    expect(run.samples.filter((r) => r.status === "failed")).to.have.length(22);
    expect(run.samples).to.have.length(8 * 100 + 22);
    const r = proposeDeadline(run, { routerOverheadS: 0.05, clientTtftS: 10, minSamples: 100 });
    // e1 -> e0 completes attempts up to 110: max 0.210, p99 0.209, and 1.2 × 0.209 exceeds the max.
    expect(r.floor).to.be.closeTo(1.2 * 0.209 + 0.5, 1e-9);
    expect(r.deadline).to.equal(0.8);
  });

  it("sequential mode samples one path at a time in order", async () => {
    const s = sampler(() => undefined);
    await runCalibration({ paths: paths.slice(0, 2), inputLengths: [8], samplesPerGroup: 100, maxFailuresPerGroup: 100, schedule: "sequential" }, s);
    expect(s.calls.slice(0, 3).map((c) => [c.p.producer, c.attempt])).to.deep.equal([
      ["e0", 0],
      ["e0", 1],
      ["e0", 2],
    ]);
    expect(roundRobin(paths.map((p) => ({ ...p, repeat: 0 }))).length).to.be.greaterThan(1);
  });

  it("stops a group after its allowed failures and refuses to propose a deadline, naming the path and the last failure", async () => {
    const s = sampler((p, _attempt, n) => (p.producer === "e2" && n === 4095 ? "engine_error" : undefined));
    const run = await runCalibration({ paths, inputLengths: [64, 4095], samplesPerGroup: 100, maxFailuresPerGroup: 5, schedule: "concurrent" }, s);
    expect(run.incomplete).to.deep.equal(["e2 -> e1 at 4095 tokens: 0 of 100 samples completed, 5 attempts failed (last: engine_error: expired after 10 s)"]);
    expect(() => proposeDeadline(run, { routerOverheadS: 0, clientTtftS: 10, minSamples: 100 })).to.throw(/diagnose the failed paths before selecting a serving deadline: e2 -> e1 at 4095 tokens/);
  });

  it("refuses a run with no path or no length", async () => {
    const s = sampler(() => undefined);
    let err: Error | undefined;
    await runCalibration({ paths: [], inputLengths: [8], samplesPerGroup: 100, maxFailuresPerGroup: 1, schedule: "concurrent" }, s).catch((e) => (err = e));
    expect(err?.message).to.match(/no directed path/);
  });
});
