/**
 * A probe's reservation over several engines from reads through its routes: idle when every engine
 * finished exactly the probe's requests; another client's finishes or held requests named per engine;
 * an engine whose /metrics cannot be read at either edge not proved idle, its reason naming it, the
 * others still witnessed.
 */
import { expect } from "chai";
import { windowReservation, windowStart, type LoadReader } from "../../../lib/engine/reservation-window";
import type { EngineLoad } from "../../../lib/engine/reservation";
import type { SettleClock } from "../../../lib/engine/settled-load";

const load = (finished: number, inFlight = 0, processStart: number | null = 100): EngineLoad => ({ finished, inFlight, processStart });

const clock: SettleClock = (() => {
  let t = 0;
  return { now: () => t, sleep: async (ms: number) => void (t += ms) };
})();

/** Each engine's reads in turn (the last one repeats); an Error stands for an unreadable /metrics. */
function reads(by: Record<string, Array<EngineLoad | Error>>): LoadReader {
  const used = new Map<string, number>();
  return async (engine) => {
    const i = used.get(engine) ?? 0;
    used.set(engine, i + 1);
    const list = by[engine];
    const r = list[Math.min(i, list.length - 1)];
    if (r instanceof Error) throw r;
    return r;
  };
}

const own = (counts: Record<string, number>) => (engine: string) => ({ own: counts[engine] ?? 0 });

describe("engine: a probe's reservation over its window", () => {
  it("is idle when each engine finished exactly the probe's own requests", async () => {
    const read = reads({ e0: [load(5), load(9)], e1: [load(0), load(4)] });
    const start = await windowStart(["e0", "e1"], read);
    const r = await windowReservation(start, read, own({ e0: 4, e1: 4 }), { clock });
    expect(r.idle).to.equal(true);
    expect(r.reasons).to.deep.equal([]);
    expect(r.engines.map((w) => [w.engine, w.own, w.foreign, w.restarted])).to.deep.equal([
      ["e0", 4, 0, false],
      ["e1", 4, 0, false],
    ]);
  });

  it("names the engine that served another client, and only that one", async () => {
    const read = reads({ e0: [load(5), load(12)], e1: [load(0), load(4)] });
    const start = await windowStart(["e0", "e1"], read);
    const r = await windowReservation(start, read, own({ e0: 4, e1: 4 }), { clock });
    expect(r.idle).to.equal(false);
    expect(r.engines.map((w) => [w.engine, w.foreign])).to.deep.equal([
      ["e0", 3],
      ["e1", 0],
    ]);
    expect(r.reasons).to.deep.equal(["engine e0 served 3 requests besides the probe's 4: it was not reserved, so its figures are not the runbook's idle figures"]);
  });

  it("records an engine whose /metrics cannot be read as not idle, naming it, and still witnesses the others", async () => {
    const read = reads({ e0: [new Error("e0 /metrics answered 503: ")], e1: [load(0), load(4)], e2: [load(1), new Error("e2 /metrics: no answer within 5 s")] });
    const start = await windowStart(["e0", "e1", "e2"], read);
    expect(start.map((s) => [s.engine, s.unread ?? "read"])).to.deep.equal([
      ["e0", "e0 /metrics answered 503: "],
      ["e1", "read"],
      ["e2", "read"],
    ]);
    const r = await windowReservation(start, read, own({ e1: 4, e2: 4 }), { clock });
    expect(r.idle).to.equal(false);
    expect(r.engines.map((w) => [w.engine, w.foreign])).to.deep.equal([["e1", 0]]);
    expect(r.reasons).to.deep.equal([
      "engine e0's /metrics could not be read before the probe (e0 /metrics answered 503: ): whether it served anything besides the probe is unknown",
      "engine e2's /metrics could not be read after the probe (e2 /metrics: no answer within 5 s): whether it served anything besides the probe is unknown",
    ]);
  });

  it("waits for an engine's finish counter to cover the probe before judging it", async () => {
    // The first after-read still shows the probe's last request running and unfinished.
    const read = reads({ e0: [load(5), load(8, 1), load(9)] });
    const start = await windowStart(["e0"], read);
    const r = await windowReservation(start, read, own({ e0: 4 }), { clock });
    expect(r.idle).to.equal(true);
    expect(r.engines[0].after).to.deep.equal(load(9));
  });
});
