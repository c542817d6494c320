import { expect } from "chai";
import type { EngineLoad } from "../../../lib/engine/reservation";
import type { CountedClient } from "../../../lib/profiling/counted-client";
import { QUIET_BUDGET_S, QUIET_SPAN_MS, trafficWitness } from "../../../lib/profiling/traffic";

/** An engine whose finish counter the test moves, and a client whose own completions it counts. */
function engine() {
  const state = { finished: 0, inFlight: 0, reads: 0, own: 0 };
  const readLoad = async (): Promise<EngineLoad> => (state.reads++, { finished: state.finished, inFlight: state.inFlight, processStart: 1000.5 });
  const client = { finished: () => state.own } as CountedClient;
  const ownRequest = () => (state.own++, state.finished++);
  const foreignRequest = () => state.finished++;
  return { state, readLoad, client, ownRequest, foreignRequest };
}

describe("profiling: each sample's traffic, one read between two samples", () => {
  it("reads once to open the sweep and once per sample after that", async () => {
    const e = engine();
    const w = trafficWitness("e0", e.readLoad, e.client);
    for (let i = 0; i < 3; i++) {
      const close = await w.begin();
      e.ownRequest();
      expect(await close()).to.equal(0);
    }
    expect(e.state.reads).to.equal(4);
  });

  it("counts a request another client sent between two samples against the next, and the profile's own warm-up as its own", async () => {
    const e = engine();
    const w = trafficWitness("e0", e.readLoad, e.client);
    let close = await w.begin();
    e.ownRequest();
    expect(await close()).to.equal(0);
    e.foreignRequest();
    e.ownRequest(); // a warm-up cohort between samples
    close = await w.begin();
    e.ownRequest();
    expect(await close()).to.equal(1);
    close = await w.begin();
    e.ownRequest();
    expect(await close()).to.equal(0);
  });

  it("counts what the engine still holds at a sample's end", async () => {
    const e = engine();
    const w = trafficWitness("e0", e.readLoad, e.client);
    const close = await w.begin();
    e.ownRequest();
    e.state.inFlight = 2;
    // The closing read waits its bound for the engine to drop them, then counts them.
    expect(await close()).to.equal(2);
  });

  describe("waiting for the engine to serve nobody else before a re-take", () => {
    /** A clock whose sleeps move time on and let `traffic(t)` move the engine, as a serving router would. */
    function timed(e: ReturnType<typeof engine>, traffic: (t: number) => void) {
      let t = 0;
      return { now: () => t, sleep: async (ms: number) => { t += ms; traffic(t); } };
    }

    it("waits until the router stops sending, then a quiet span; what it served meanwhile is no sample's", async () => {
      const e = engine();
      // One request finishing every 100 ms for the first 5 s, as a router does until its identity check.
      const clock = timed(e, (t) => { if (t <= 5000) e.state.finished = Math.floor(t / 100); });
      const w = trafficWitness("e0", e.readLoad, e.client, clock);
      const waited = await w.quiet();
      expect(waited).to.be.at.least(5000 + QUIET_SPAN_MS).and.below(5000 + QUIET_SPAN_MS + 500);
      const close = await w.begin();
      e.ownRequest();
      expect(await close(), "the next sample opens after the wait").to.equal(0);
    });

    it("does not call an engine quiet while it holds a request", async () => {
      const e = engine();
      e.state.inFlight = 1;
      const clock = timed(e, (t) => { if (t >= 3000) e.state.inFlight = 0; });
      const waited = await trafficWitness("e0", e.readLoad, e.client, clock).quiet();
      expect(waited).to.be.at.least(3000 + QUIET_SPAN_MS);
    });

    it("gives up at one bound for the whole sweep when the traffic never stops", async () => {
      const e = engine();
      const clock = timed(e, (t) => (e.state.finished = Math.floor(t / 100)));
      const w = trafficWitness("e0", e.readLoad, e.client, clock);
      const first = await w.quiet();
      expect(first).to.be.at.least(QUIET_BUDGET_S * 1000).and.below(QUIET_BUDGET_S * 1000 + 500);
      expect(await w.quiet(), "the bound is spent: later re-takes do not wait").to.equal(0);
    });
  });
});
