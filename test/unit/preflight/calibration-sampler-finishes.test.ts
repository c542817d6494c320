/**
 * The calibration sampler's count of its own finished requests per engine, against engine simulators on
 * 127.0.0.1: it is exactly what each engine's `vllm:request_success_total` gained over the samples, for
 * completed samples (a prefill and a decode leg each), a decode the sampler abandoned at the observation
 * bound (its prefill counted, the aborted decode not: given up on), and a prefill refused for its length (nothing);
 * /tokenize and /metrics are no requests to it. `load` reads an engine's counters through its route.
 */
import { expect } from "chai";
import { httpSampler } from "../../../lib/preflight/calibration-sampler";
import { windowReservation, windowStart } from "../../../lib/engine/reservation-window";
import { KV_BOTH, makeModel, removeTemps, startEngine, stopAll, type SimEngine } from "../sim-engine/helpers";

const API_KEY = "sk-narwhal-sampler-finishes-7d41";
const CONTEXT = 512;
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--max-model-len", String(CONTEXT), "--max-num-seqs", "8", "--kv-transfer-config", KV_BOTH];
const SIM = { timeScale: 0.01, startupDelayS: 0 };

describe("calibration sampler: its own finished requests per engine", function () {
  this.timeout(120_000);
  const engines = new Map<string, SimEngine>();

  before(async () => {
    const model = makeModel({ config: { max_position_embeddings: 32768 } });
    engines.set("e0", await startEngine({ model, args: ARGS, sim: SIM }));
    engines.set("e1", await startEngine({ model, args: ARGS, sim: SIM }));
    // e2's first token takes 200 s of model time (2 s at this scale), past the 0.5 s observation bound.
    engines.set("e2", await startEngine({ model, args: ARGS, sim: { ...SIM, latency: { default: { decodeBase: 200 } } } }));
  });

  after(async () => {
    await stopAll();
    removeTemps();
  });

  it("counts exactly the requests each engine's finish counter gained from the samples", async () => {
    const sampler = httpSampler({
      engines: [...engines].map(([iid, e]) => ({ iid, url: e.url })),
      model: "tiny",
      apiKey: API_KEY,
      timeouts: { healthS: 5, prefillS: 30, tokenizeS: 5, observationBoundS: 0.5, requestS: 60 },
    });
    try {
      const ids = [...engines.keys()];
      const start = await windowStart(ids, sampler.load);
      const outcomes = [
        ...(await Promise.all([0, 1, 2].map((k) => sampler.sample({ producer: "e0", consumer: "e1" }, 64, k)))),
        await sampler.sample({ producer: "e1", consumer: "e0" }, 200, 0),
        await sampler.sample({ producer: "e0", consumer: "e2" }, 64, 0),
        await sampler.sample({ producer: "e1", consumer: "e0" }, CONTEXT, 1),
      ].map((s) => `${s.producer}>${s.consumer}:${s.failure ?? s.status}`);
      expect(outcomes).to.deep.equal(["e0>e1:completed", "e0>e1:completed", "e0>e1:completed", "e1>e0:completed", "e0>e2:observation_expired", "e1>e0:prefill_failed"]);
      // e0: three prefills to e1, the decode from e1 and the prefill to e2; e1: three decodes and a prefill.
      // e2 holds the decode given up on at the observation bound until its step ends.
      expect(ids.map((iid) => sampler.ownRequests(iid))).to.deep.equal([
        { own: 5, abandoned: 0 },
        { own: 4, abandoned: 0 },
        { own: 0, abandoned: 1 },
      ]);

      // e2 still holds the abandoned decode until it sees the client gone; the settled read waits for that.
      const r = await windowReservation(start, sampler.load, sampler.ownRequests);
      expect(r.reasons).to.deep.equal([]);
      expect(r.idle).to.equal(true);
      expect(r.engines.map((w) => [w.engine, w.after.finished - w.before.finished, w.own, w.after.inFlight])).to.deep.equal([
        ["e0", 5, 5, 0],
        ["e1", 4, 4, 0],
        ["e2", 0, 0, 0],
      ]);
    } finally {
      await sampler.close();
    }
  });

  it("names the engine whose /metrics does not answer", async () => {
    const sampler = httpSampler({ engines: [{ iid: "gone", url: "http://127.0.0.1:9" }], model: "tiny", apiKey: API_KEY, timeouts: { healthS: 2, prefillS: 2, tokenizeS: 2, observationBoundS: 1, requestS: 2 } });
    try {
      let message = "";
      await sampler.load("gone").catch((err: Error) => (message = err.message));
      expect(message).to.match(/^gone \/metrics: ECONNREFUSED: /);
    } finally {
      await sampler.close();
    }
  });
});
