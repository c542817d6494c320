import { expect } from "chai";
import type { EngineLoad } from "../../../lib/engine/reservation";
import type { CountedClient } from "../../../lib/profiling/counted-client";
import { trafficWitness } from "../../../lib/profiling/traffic";

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
});
