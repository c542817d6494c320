/**
 * The after-read of a probe's window: taken again within its bound until the engine's finish counter
 * covers the probe's own finishes with nothing in flight, the last read kept when it never does, no
 * wait at all for an engine that restarted (its counters cannot catch up), and a longer wait while all
 * an engine holds may be requests the probe gave up on and the engine has not dropped yet.
 */
import { expect } from "chai";
import { ABANDONED_SETTLE_BOUND_S, loadSettled, mayBeOwn, settledLoad, SETTLE_BOUND_S, SETTLE_POLL_MS, type SettleClock } from "../../../lib/engine/settled-load";
import type { EngineLoad } from "../../../lib/engine/reservation";

const load = (finished: number, inFlight = 0, processStart: number | null = 100): EngineLoad => ({ finished, inFlight, processStart });

/** A clock that only moves when slept on, and the sleeps it was asked for. */
function fakeClock(): SettleClock & { t: number; slept: number[] } {
  const c = {
    t: 0,
    slept: [] as number[],
    now: () => c.t,
    sleep: async (ms: number) => {
      c.slept.push(ms);
      c.t += ms;
    },
  };
  return c;
}

/** A reader giving `reads` in turn (the last one repeats), counting its calls. */
function reader(reads: EngineLoad[]) {
  const r = {
    calls: 0,
    read: async () => reads[Math.min(r.calls++, reads.length - 1)],
  };
  return r;
}

describe("engine: settled after-read of a probe's window", () => {
  it("judges a read settled when it covers the probe's finishes and holds nothing, or the process changed", () => {
    const before = load(10);
    expect(loadSettled(before, load(13), 3)).to.equal(true);
    expect(loadSettled(before, load(15), 3)).to.equal(true);
    expect(loadSettled(before, load(12), 3)).to.equal(false);
    expect(loadSettled(before, load(13, 1), 3)).to.equal(false);
    expect(loadSettled(before, load(0, 1, 200), 3)).to.equal(true);
    expect(loadSettled(before, load(2, 0), 3)).to.equal(true);
  });

  it("takes one read when the counters already cover the probe", async () => {
    const clock = fakeClock();
    const r = reader([load(13)]);
    expect(await settledLoad(r.read, load(10), { own: 3 }, { clock })).to.deep.equal(load(13));
    expect(r.calls).to.equal(1);
    expect(clock.slept).to.deep.equal([]);
  });

  it("reads again until the finish counter catches up with the probe's last answer", async () => {
    const clock = fakeClock();
    const r = reader([load(12, 1), load(12, 1), load(13, 0), load(14, 0)]);
    expect(await settledLoad(r.read, load(10), { own: 3 }, { clock })).to.deep.equal(load(13));
    expect(r.calls).to.equal(3);
    expect(clock.slept).to.deep.equal([SETTLE_POLL_MS, SETTLE_POLL_MS]);
  });

  it("keeps the last read once the bound has passed, however much the engine still holds", async () => {
    const clock = fakeClock();
    const r = reader([load(13, 2)]);
    expect(await settledLoad(r.read, load(10), { own: 3 }, { clock })).to.deep.equal(load(13, 2));
    expect(clock.t).to.equal(SETTLE_BOUND_S * 1000);
    expect(r.calls).to.equal((SETTLE_BOUND_S * 1000) / SETTLE_POLL_MS + 1);
  });

  it("shortens its last pause to the bound and takes a read at it", async () => {
    const clock = fakeClock();
    const r = reader([load(10, 1)]);
    await settledLoad(r.read, load(10), { own: 1 }, { clock, boundS: 0.25, pollMs: 100 });
    expect(clock.slept).to.deep.equal([100, 100, 50]);
    expect(r.calls).to.equal(4);
  });

  it("does not wait on an engine whose process changed", async () => {
    const clock = fakeClock();
    const r = reader([load(1, 0, 200), load(20, 0, 100)]);
    expect(await settledLoad(r.read, load(10), { own: 3 }, { clock })).to.deep.equal(load(1, 0, 200));
    expect(r.calls).to.equal(1);
  });

  it("judges whether all a read shows may be the probe's own requests, answered or given up on", () => {
    const before = load(10);
    expect(mayBeOwn(before, load(12, 3), { own: 3, abandoned: 2 })).to.equal(true);
    expect(mayBeOwn(before, load(13, 2), { own: 3, abandoned: 2 })).to.equal(true);
    expect(mayBeOwn(before, load(13, 3), { own: 3, abandoned: 2 })).to.equal(false);
    expect(mayBeOwn(before, load(14, 0), { own: 3, abandoned: 2 })).to.equal(false);
    expect(mayBeOwn(before, load(13, 1), { own: 3 })).to.equal(false);
  });

  it("waits past the short bound for an engine to drop the requests the probe gave up on", async () => {
    const clock = fakeClock();
    // The engine holds the probe's two abandoned decodes until its step ends, 3 s after the probe.
    const read = async () => (clock.t < 3000 ? load(13, 2) : load(13, 0));
    expect(await settledLoad(read, load(10), { own: 3, abandoned: 2 }, { clock })).to.deep.equal(load(13));
    expect(clock.t).to.equal(3000);
  });

  it("keeps the last read at the longer bound when the engine never drops what the probe gave up on", async () => {
    const clock = fakeClock();
    const r = reader([load(13, 1)]);
    expect(await settledLoad(r.read, load(10), { own: 3, abandoned: 1 }, { clock })).to.deep.equal(load(13, 1));
    expect(clock.t).to.equal(ABANDONED_SETTLE_BOUND_S * 1000);
  });

  it("waits only the short bound when an engine holds more than the probe gave up on", async () => {
    const clock = fakeClock();
    const r = reader([load(13, 3)]);
    expect(await settledLoad(r.read, load(10), { own: 3, abandoned: 1 }, { clock })).to.deep.equal(load(13, 3));
    expect(clock.t).to.equal(SETTLE_BOUND_S * 1000);
  });

  it("ends the wait with the error of a read that fails", async () => {
    const clock = fakeClock();
    let calls = 0;
    const read = async () => {
      if (calls++) throw new Error("e1 /metrics: no answer within 5 s");
      return load(12, 1);
    };
    let message = "";
    await settledLoad(read, load(10), { own: 3 }, { clock }).catch((err: Error) => (message = err.message));
    expect(message).to.equal("e1 /metrics: no answer within 5 s");
  });
});
