import { expect } from "chai";
import { loadOf, reservationOf, reservationReasons, witness, type EngineLoad } from "../../../lib/engine/reservation";

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
    expect(r.reasons[0]).to.match(/engine e0 restarted during the probe \(process start 1000.5 -> 2000.5, finished 10 -> 3\)/);
    // Without a process start (several API servers), a finish counter that went back says the same.
    expect(witness("e0", load(10, 0, null), load(3, 0, null), 0).restarted).to.equal(true);
  });

  it("says why a recorded step was not reserved, and nothing for a reserved or unwitnessed one", () => {
    const busy = reservationOf([witness("e0", load(0), load(3), 1)]);
    expect(reservationReasons({ reservation: busy })).to.deep.equal(busy.reasons);
    expect(reservationReasons({ reservation: reservationOf([]) })).to.equal(undefined);
    expect(reservationReasons({})).to.equal(undefined);
    expect(reservationReasons({ reservation: { idle: false } })).to.deep.equal(["the probe's engines served other requests during it"]);
  });
});
