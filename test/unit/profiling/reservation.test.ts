import { expect } from "chai";
import { witness, type EngineLoad } from "../../../lib/engine/reservation";
import { sweepReservation } from "../../../lib/profiling/reservation";
import type { ResampleSummary } from "../../../lib/profiling/resample";

const load = (finished: number, processStart = 1000.5): EngineLoad => ({ finished, inFlight: 0, processStart });
const summary = (shared: number, keptShared: number): ResampleSummary => ({ threshold: 0.1, budget: 40, spent: false, samples: 40, disturbed: 0, retaken: shared, keptDisturbed: 0, shared, keptShared, foreignRequests: shared, quietWaitS: shared ? 30 : 0, peakLateness: 0, meanLateness: 0, peakPressure: null, meanPressure: null, points: [] });

describe("profiling: a sweep's reservation rests on the samples its fits keep", () => {
  it("is reserved when every shared sample was taken again alone, though the window saw the other request", () => {
    const r = sweepReservation(witness("e0", load(10), load(51), 40), summary(1, 0));
    expect(r.idle).to.equal(true);
    expect(r.reasons).to.deep.equal([]);
    expect(r.engines[0].foreign).to.equal(1);
    expect(r.samples).to.deep.equal({ shared: 1, keptShared: 0, kept: 40, quietWaitS: 30 });
  });

  it("is not reserved when a kept sample still shared the engine, naming how many", () => {
    const r = sweepReservation(witness("e0", load(10), load(80), 40), summary(12, 3));
    expect(r.idle).to.equal(false);
    expect(r.reasons).to.deep.equal([
      "engine e0: 3 of the 40 samples its fits rest on shared it with other requests (30 besides the sweep's 40 over the sweep; re-takes ran out, 30 s waited for it to serve nobody else): it was not reserved, so its figures are not the runbook's idle figures",
    ]);
  });

  it("falls back to the window without a per-sample witness, and leaves a restart unproven", () => {
    expect(sweepReservation(witness("e0", load(10), load(51), 40), undefined).idle).to.equal(false);
    expect(sweepReservation(witness("e0", load(10), load(50), 40), undefined).idle).to.equal(true);
    const restarted = sweepReservation(witness("e0", load(10), load(3, 2000.5), 40), summary(0, 0));
    expect(restarted.idle).to.equal(false);
    expect(restarted.reasons[0]).to.match(/^engine e0 restarted during the probe/);
  });
});
