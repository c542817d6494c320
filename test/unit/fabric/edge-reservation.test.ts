import { expect } from "chai";
import { loadOf } from "../../../lib/engine/reservation";
import { edgeReservation, metricsTarget, reservationSummary, type EdgeHostEngine, type EngineRead } from "../../../lib/fabric/edge-reservation";

/** A vLLM `/metrics` body with what a reservation reads: finishes by reason, the queue, the process start. */
function metrics(o: { stop: number; length?: number; running?: number; waiting?: number; start?: number }): string {
  return `# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds ${o.start ?? 1764934171.62}
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tiny"} ${o.running ?? 0}
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="tiny"} ${o.waiting ?? 0}
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="tiny"} 51200.0
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="tiny"} 12800.0
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="tiny"} ${o.stop}
vllm:request_success_total{engine="0",finished_reason="length",model_name="tiny"} ${o.length ?? 0}
`;
}

const read = (m: Parameters<typeof metrics>[0]): EngineRead => ({ ok: true, load: loadOf(metrics(m), "engine") });
const e1: EdgeHostEngine = { engineId: "e1", side: "source", url: "http://198.18.0.11:8100" };
const e2: EdgeHostEngine = { engineId: "e2", side: "destination", url: "http://198.18.0.12:8100" };

describe("fabric edge reservation", () => {
  it("reads /metrics at the engine's own address and port, under any base path, IPv6 unbracketed", () => {
    expect(metricsTarget("http://198.18.0.11:8100")).to.deep.equal({ host: "198.18.0.11", port: 8100, path: "/metrics" });
    expect(metricsTarget("http://[fd00::12]:8100/")).to.deep.equal({ host: "fd00::12", port: 8100, path: "/metrics" });
    expect(metricsTarget("http://engine.local/e1/")).to.deep.equal({ host: "engine.local", port: 80, path: "/e1/metrics" });
  });

  it("is idle with no engines on either host", () => {
    const r = edgeReservation([]);
    expect(r).to.deep.equal({ idle: true, engines: [], reasons: [], watched: [], unread: [] });
    expect(reservationSummary(r)).to.deep.equal({ idle: true, reasons: [], foreign: {} });
  });

  it("is idle when no engine finished or held a request during the measurement", () => {
    const r = edgeReservation([
      { engine: e1, before: read({ stop: 40, length: 60 }), after: read({ stop: 40, length: 60 }) },
      { engine: e2, before: read({ stop: 3 }), after: read({ stop: 3 }) },
    ]);
    expect(r.idle).to.equal(true);
    expect(r.reasons).to.deep.equal([]);
    expect(r.engines.map((w) => [w.engine, w.own, w.foreign])).to.deep.equal([["e1", 0, 0], ["e2", 0, 0]]);
    expect(reservationSummary(r)).to.deep.equal({ idle: true, reasons: [], foreign: { e1: 0, e2: 0 } });
  });

  it("counts every finish and every held request as foreign: the probe sends none", () => {
    const r = edgeReservation([
      { engine: e1, before: read({ stop: 40 }), after: read({ stop: 45, length: 2, running: 1, waiting: 2 }) },
      { engine: e2, before: read({ stop: 3 }), after: read({ stop: 3 }) },
    ]);
    expect(r.idle).to.equal(false);
    expect(r.engines[0]).to.include({ engine: "e1", own: 0, foreign: 10, restarted: false });
    expect(r.reasons).to.deep.equal([
      "engine e1 served 10 requests besides the probe's 0, 3 still running or waiting at its end: it was not reserved, so its figures are not the runbook's idle figures",
    ]);
    expect(reservationSummary(r).foreign).to.deep.equal({ e1: 10, e2: 0 });
  });

  it("is not idle when an engine restarted in the window: its counters started again", () => {
    const r = edgeReservation([{ engine: e2, before: read({ stop: 3, start: 100 }), after: read({ stop: 0, start: 200 }) }]);
    expect(r.idle).to.equal(false);
    expect(r.reasons[0]).to.match(/^engine e2 restarted during the probe \(process start 100 -> 200, finished/);
    expect(reservationSummary(r).foreign).to.deep.equal({ e2: null });
  });

  it("cannot prove an engine idle whose /metrics could not be read at either end, and says which end and what failed", () => {
    const r = edgeReservation([
      { engine: e1, before: { ok: false, problem: "host a: connection refused" }, after: read({ stop: 1 }) },
      { engine: e2, before: read({ stop: 3 }), after: read({ stop: 3 }) },
    ]);
    expect(r.idle).to.equal(false);
    expect(r.engines.map((w) => w.engine)).to.deep.equal(["e2"]);
    expect(r.unread).to.deep.equal([{ engine: "e1", side: "source", url: e1.url, problems: ["before the measurement (host a: connection refused)"] }]);
    expect(r.reasons).to.deep.equal([
      "engine e1 on the source host (http://198.18.0.11:8100): its /metrics could not be read before the measurement (host a: connection refused): " +
        "its counters cannot say what else it served, so it is not proved idle",
    ]);
    expect(reservationSummary(r)).to.deep.equal({ idle: false, reasons: r.reasons, foreign: { e1: null, e2: 0 } });

    const both = edgeReservation([{ engine: e2, before: { ok: false, problem: "HTTP 500" }, after: { ok: false, problem: "timed out" } }]);
    expect(both.unread[0].problems).to.deep.equal(["before the measurement (HTTP 500)", "after it (timed out)"]);
    expect(both.reasons).to.have.length(1);
    const alike = edgeReservation([{ engine: e2, before: { ok: false, problem: "connection refused" }, after: { ok: false, problem: "connection refused" } }]);
    expect(alike.unread[0].problems).to.deep.equal(["before or after the measurement (connection refused)"]);
  });
});
