import { expect } from "chai";
import { loadOf, reservationOf, reservationReasons, settledLoad, witness, type EngineLoad } from "../../../lib/engine/reservation";

const metrics = (finished: { stop: number; length: number }, running: number, waiting: number, start = 1000.5) => `# TYPE process_start_time_seconds gauge
process_start_time_seconds ${start}
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tiny"} ${running}.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="tiny"} ${waiting}.0
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="tiny"} 100.0
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="tiny"} 100.0
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="tiny"} ${finished.stop}.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="tiny"} ${finished.length}.0
`;

const load = (finished: number, inFlight = 0, processStart: number | null = 1000.5): EngineLoad => ({ finished, inFlight, processStart });

describe("engine: a probe's reservation, proved from the engine's own counters", () => {
  it("reads finishes over every finished_reason, and running plus waiting as what the engine holds", () => {
    expect(loadOf(metrics({ stop: 4, length: 6 }, 2, 1), "engine e0")).to.deep.equal({ finished: 10, inFlight: 3, processStart: 1000.5 });
  });

  it("refuses a /metrics without vLLM's gauges, naming the engine", () => {
    expect(() => loadOf("process_start_time_seconds 1\n", "engine e0 at http://10.0.0.1:8000")).to.throw(/^engine e0 at http:\/\/10\.0\.0\.1:8000 \/metrics has no vllm:\S+ sample/);
  });

  it("counts nothing foreign when the engine finished exactly the probe's own requests and holds none", () => {
    const r = reservationOf([witness("e0", load(10), load(50), 40)]);
    expect(r.idle).to.equal(true);
    expect(r.reasons).to.deep.equal([]);
    expect(r.engines[0].foreign).to.equal(0);
  });

  it("counts what the engine finished beyond the probe's own, and what it still holds at the end", () => {
    const r = reservationOf([witness("e0", load(10, 1), load(53, 2), 40), witness("e1", load(0), load(0), 0)]);
    expect(r.idle).to.equal(false);
    expect(r.engines.map((w) => w.foreign)).to.deep.equal([5, 0]);
    expect(r.reasons).to.have.length(1);
    expect(r.reasons[0]).to.match(/^engine e0 served 5 requests besides the probe's 40, 2 still running or waiting at its end: it was not reserved/);
  });

  it("does not prove a window in which the engine restarted (its counters began again)", () => {
    const r = reservationOf([witness("e0", load(10, 0, 1000.5), load(3, 0, 2000.5), 40)]);
    expect(r.idle).to.equal(false);
    expect(r.reasons[0]).to.match(/engine e0 restarted during the probe \(process start 1000.5 -> 2000.5\)/);
  });

  it("says why a recorded step was not reserved, and nothing for a reserved or unwitnessed one", () => {
    const busy = reservationOf([witness("e0", load(0), load(3), 1)]);
    expect(reservationReasons({ reservation: busy })).to.deep.equal(busy.reasons);
    expect(reservationReasons({ reservation: reservationOf([]) })).to.equal(undefined);
    expect(reservationReasons({})).to.equal(undefined);
    expect(reservationReasons({ reservation: { idle: false } })).to.deep.equal(["the probe's engines served other requests during it"]);
  });

  describe("the closing read", () => {
    const clock = () => {
      let t = 0;
      return { now: () => t, sleep: async (ms: number) => void (t += ms) };
    };

    it("reads again until the finish counter covers the probe's own requests", async () => {
      const reads = [load(12, 1), load(13, 0), load(14, 0)];
      let n = 0;
      const after = await settledLoad(async () => reads[n++], load(10), 4, clock());
      expect(after).to.deep.equal(load(14, 0));
      expect(n).to.equal(3);
    });

    it("takes the last read once its bound has passed: what it still shows is foreign", async () => {
      let n = 0;
      const c = clock();
      const after = await settledLoad(async () => (n++, load(20, 1)), load(10), 4, { ...c, boundS: 2 });
      expect(after).to.deep.equal(load(20, 1));
      expect(n).to.be.greaterThan(2);
      expect(n).to.be.at.most(2000 / 25 + 1);
      expect(c.now()).to.equal(2000);
    });

    it("stops at once when the process changed", async () => {
      let n = 0;
      const after = await settledLoad(async () => (n++, load(0, 0, 3000)), load(10), 4, clock());
      expect(after.processStart).to.equal(3000);
      expect(n).to.equal(1);
    });
  });
});
