/**
 * The contention reading of the machine that times a profile's requests: PSI's `some` total parsed from
 * `/proc/pressure/cpu`, its delta over a sample's wall time as a share, the profiler's own event-loop
 * lateness from the delay histogram, and a kernel without PSI (no file, psi=0, a read failing mid-run)
 * leaving the pressure unknown while the lateness still decides. Fake clock, histogram and file.
 */
import { expect } from "chai";
import { contentionGauge, loopLatenessS, psiSomeTotalUs, stalledFraction, type LoopDelayHistogram } from "../../../lib/profiling/contention";

const PSI = (someUs: number) => `some avg10=2.35 avg60=1.18 avg300=19.31 total=${someUs}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n`;

/** A clock, a histogram and a PSI file the test moves by hand. */
function fakeMachine(psi: boolean) {
  const m = { t: 100, someUs: 17_384_076_493, loop: { count: 0, mean: Number.NaN }, psiFails: false };
  /** `seconds` pass; the loop's 5 ms timer fires `ticks` times, late by `lateMs` in all; PSI's stall grows by `stalledS`. */
  const pass = (seconds: number, o: { ticks: number; lateMs: number; stalledS: number }) => {
    m.t += seconds;
    const totalNs = m.loop.count ? m.loop.count * m.loop.mean : 0;
    const count = m.loop.count + o.ticks;
    m.loop = { count, mean: (totalNs + o.ticks * 5e6 + o.lateMs * 1e6) / count };
    m.someUs += Math.round(o.stalledS * 1e6);
  };
  const io = {
    loop: new Proxy({}, { get: (_t, k) => m.loop[k as keyof LoopDelayHistogram] }) as LoopDelayHistogram,
    resolutionMs: 5,
    now: () => m.t,
    ...(psi
      ? {
          readPsi: () => {
            if (m.psiFails) throw new Error("EIO");
            return PSI(m.someUs);
          },
        }
      : {}),
  };
  return { m, pass, io };
}

describe("profiling: the timing machine's contention", () => {
  it("reads PSI's `some` total and nothing else; text without it is no reading", () => {
    expect(psiSomeTotalUs(PSI(17384076493))).to.equal(17384076493);
    expect(psiSomeTotalUs("full avg10=0.00 avg60=0.00 avg300=0.00 total=12\n")).to.equal(undefined);
    expect(psiSomeTotalUs("some avg10=0.00 avg60=0.00 avg300=0.00\n")).to.equal(undefined);
    expect(psiSomeTotalUs("some avg10=0.00 total=12x\n")).to.equal(undefined);
    expect(psiSomeTotalUs("")).to.equal(undefined);
  });

  it("a stall's share of the wall time stays within [0, 1]", () => {
    expect(stalledFraction(0.25, 1)).to.equal(0.25);
    expect(stalledFraction(1.02, 1)).to.equal(1);
    expect(stalledFraction(-0.001, 1)).to.equal(0);
    expect(stalledFraction(0.1, 0)).to.equal(0);
  });

  it("the loop's lateness is every interval beyond its resolution (perf_hooks records whole intervals, in ns)", () => {
    expect(loopLatenessS({ count: 0, mean: Number.NaN }, 5)).to.equal(0);
    // 40 intervals, one blocked for 100 ms: mean (39·5 + 105) / 40 ms.
    expect(loopLatenessS({ count: 40, mean: ((39 * 5 + 105) / 40) * 1e6 }, 5)).to.be.closeTo(0.1, 1e-9);
  });

  it("gauges a sample's lateness and the machine's pressure over its own wall time", () => {
    const { pass, io } = fakeMachine(true);
    pass(1, { ticks: 200, lateMs: 0, stalledS: 0.9 });
    const gauge = contentionGauge(io);
    expect(gauge.pressure).to.equal(true);
    const end = gauge.begin();
    pass(0.2, { ticks: 30, lateMs: 50, stalledS: 0.16 });
    const r = end();
    expect(r.wallS).to.be.closeTo(0.2, 1e-9);
    expect(r.lateS).to.be.closeTo(0.05, 1e-9);
    expect(r.lateness).to.be.closeTo(0.25, 1e-9);
    expect(r.pressure).to.be.closeTo(0.8, 1e-9);
    // What happened before the sample began is not its own.
    const quiet = gauge.begin();
    pass(0.5, { ticks: 100, lateMs: 0, stalledS: 0 });
    expect(quiet()).to.deep.include({ lateS: 0, lateness: 0, pressure: 0 });
  });

  it("without PSI (no file, psi=0: the read throws) the pressure is unknown and the lateness still decides", () => {
    const none = fakeMachine(false);
    const absent = { ...none.io, readPsi: () => { throw Object.assign(new Error("ENOENT: no such file"), { code: "ENOENT" }); } };
    for (const io of [none.io, absent, { ...none.io, readPsi: () => "" }]) {
      const gauge = contentionGauge(io);
      expect(gauge.pressure).to.equal(false);
      const end = gauge.begin();
      none.pass(0.1, { ticks: 10, lateMs: 30, stalledS: 0 });
      const r = end();
      expect(r.pressure).to.equal(null);
      expect(r.lateness).to.be.closeTo(0.3, 1e-9);
    }
  });

  it("a PSI read failing mid-run leaves that sample's pressure unknown, never zero or invented", () => {
    const { m, pass, io } = fakeMachine(true);
    const gauge = contentionGauge(io);
    const end = gauge.begin();
    pass(0.1, { ticks: 20, lateMs: 0, stalledS: 0.05 });
    m.psiFails = true;
    expect(end().pressure).to.equal(null);
    m.psiFails = false;
    const next = gauge.begin();
    pass(0.1, { ticks: 20, lateMs: 0, stalledS: 0.05 });
    expect(next().pressure).to.be.closeTo(0.5, 1e-9);
  });
});
