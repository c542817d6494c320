import { expect } from "chai";
import { reconcile, type ReconcileInput } from "../../../lib/trial/reconcile";
import { clean, engine, record } from "./fixtures";

const only = (o: ReconcileInput) => {
  const r = reconcile(o);
  return { status: r.status, causes: r.causes, failed: r.checks.filter((c) => !c.ok).map((c) => c.name) };
};

describe("trial reconciliation", () => {
  it("reconciles a clean P/D run: one length finish per request on prefill, the client's successes and tokens on decode", () => {
    const r = reconcile(clean());
    expect(r.status).to.equal("reconciled");
    expect(r.causes).to.deep.equal([]);
    expect(r.tolerance).to.deep.equal({ sendLagMs: 50, eventLoopDelayMs: 100, tokens: 0.02 });
    expect(r.checks.map((c) => [c.name, c.client, c.server, c.ok])).to.deep.equal([
      ["no counter reset on d0", 0, 0, true],
      ["no counter reset on d1", 0, 0, true],
      ["no counter reset on p0", 0, 0, true],
      ["no counter reset on the router", 0, 0, true],
      ["router offered = requests sent", 10, 10, true],
      ["router served = client successes", 10, 10, true],
      ["decode finishes = client successes", 10, 10, true],
      ["prefill legs = router prefill attempts", 10, 10, true],
      ["generated tokens = completion tokens + prefill legs", 1010, 1010, true],
      ["Prometheus agrees with /metrics on d0", 600, 600, true],
      ["Prometheus agrees with /metrics on d1", 400, 400, true],
      ["Prometheus agrees with /metrics on p0", 10, 10, true],
      ["Prometheus agrees with /metrics on the router", 10, 10, true],
    ]);
  });

  it("names client saturation when the event loop stalled past the tolerance", () => {
    const o = clean();
    o.summary.max_event_loop_delay_ms = 180;
    expect(only(o)).to.deep.equal({
      status: "unreconciled",
      causes: ["client saturation: the load client's event loop stalled up to 180 ms (tolerance 100 ms), which inflates its own TTFT and inter-token timings"],
      failed: [],
    });
  });

  it("names scheduler lag when the p99 send lag passed the tolerance", () => {
    const o = clean();
    o.summary.p99_send_lag_ms = 75;
    o.summary.achieved_send_rate = 8.1;
    expect(only(o).causes).to.deep.equal(["scheduler lag: p99 send lag 75 ms exceeds 50 ms (achieved send rate 8.1 req/s): the offered rate was not kept"]);
  });

  it("names a failed scrape when Prometheus' deltas differ from the engines' own /metrics", () => {
    const o = clean();
    // Prometheus' last scrape of d0 came before the point ended: it missed 2 finishes and 200 tokens.
    o.prometheus!.after!.engines.d0 = engine({ success: { stop: 22, length: 12 }, generationTokens: 3400, promptTokens: 17000 });
    expect(only(o)).to.deep.equal({
      status: "unreconciled",
      causes: [
        'failed scrape: Prometheus\' deltas for engine d0 differ from its /metrics: vllm:generation_tokens_total Δ600 on /metrics, Δ400 in Prometheus; vllm:prompt_tokens_total Δ3000 on /metrics, Δ2000 in Prometheus; vllm:request_success_total{finished_reason="length"} Δ4 on /metrics, Δ2 in Prometheus',
      ],
      failed: ["Prometheus agrees with /metrics on d0"],
    });
  });

  it("names Prometheus' own problems (a target down, no scrape after the window) as failed scrapes", () => {
    const o = clean();
    o.prometheus = { before: o.prometheus!.before, problems: ["Prometheus target for engine d1 is down (up=0)"] };
    expect(only(o).causes).to.deep.equal(["failed scrape: Prometheus: Prometheus target for engine d1 is down (up=0)"]);
    o.prometheus = { before: o.prometheus.before, problems: [] };
    expect(only(o).causes).to.deep.equal(["failed scrape: Prometheus gave no snapshot after the drain"]);
  });

  it("names a failed scrape when an engine's or the router's own /metrics was not read", () => {
    const o = clean();
    delete o.direct.after.engines.d1;
    delete o.direct.before.router;
    const r = only(o);
    expect(r.causes).to.deep.equal(["failed scrape: engine d1's /metrics was not read after the drain", "failed scrape: the router's /metrics was not read before the first send"]);
    expect(r.failed).to.include.members(["router offered = requests sent", "decode finishes = client successes", "generated tokens = completion tokens + prefill legs"]);
  });

  it("names a listener conflict the provider saw", () => {
    const o = clean();
    o.listenerProblem = "the forwarded port 127.0.0.1:18000 was answered by pid 4242 (python3), not the tunnel";
    expect(only(o).causes).to.deep.equal(["listener conflict: the forwarded port 127.0.0.1:18000 was answered by pid 4242 (python3), not the tunnel"]);
  });

  it("names a counter reset when an engine restarted (process start changed)", () => {
    const o = clean();
    o.direct.after.engines.d1 = engine({ processStart: 1764934999.5, success: { length: 4 }, generationTokens: 400, promptTokens: 2000 });
    const r = only(o);
    expect(r.causes).to.deep.equal([
      "counter reset: engine d1: process_start_time_seconds 1764934171.62 -> 1764934999.5; vllm:request_success_total{finished_reason=\"length\"} fell 20 -> 4; vllm:generation_tokens_total fell 2000 -> 400; vllm:prompt_tokens_total fell 10000 -> 2000 (a restart inside the point invalidates it)",
    ]);
    expect(r.failed).to.include("no counter reset on d1");
  });

  it("names a counter reset when a counter fell without a process start to compare (several API servers)", () => {
    const o = clean();
    for (const s of [o.direct.before, o.direct.after]) for (const e of Object.values(s.engines)) delete e.processStart;
    o.direct.after.engines.p0.generationTokens = 5;
    expect(only(o).causes).to.deep.equal(["counter reset: engine p0: vllm:generation_tokens_total fell 50 -> 5 (a restart inside the point invalidates it)"]);
  });

  it("names a router restart as a counter reset", () => {
    const o = clean();
    o.direct.after.router = { offered: 10, served: 10, failed: 0, prefillAttempts: 10, decodeAttempts: 10 };
    o.prometheus = undefined;
    expect(only(o).causes[0]).to.equal(
      "counter reset: router: narwhal_offered_total fell 50 -> 10; narwhal_served_total fell 50 -> 10; narwhal_prefill_attempts_total fell 50 -> 10; narwhal_decode_attempts_total fell 50 -> 10 (a restart inside the point invalidates it)",
    );
  });

  it("says the records disagree when a count check fails with nothing else to blame", () => {
    const o = clean();
    o.direct.after.router!.served = 59;
    o.prometheus = undefined;
    expect(only(o)).to.deep.equal({
      status: "unreconciled",
      causes: ["records disagree: router served = client successes: client 10, server 9 (Δnarwhal_served_total 9, client successes 10)"],
      failed: ["router served = client successes"],
    });
  });

  it("does not say the records disagree when another cause is there to blame", () => {
    const o = clean();
    o.direct.after.router!.served = 59;
    o.summary.p99_send_lag_ms = 90;
    o.prometheus = undefined;
    const r = only(o);
    expect(r.causes).to.have.length(1);
    expect(r.causes[0]).to.match(/^scheduler lag: /);
  });

  it("allows decode finishes for router decode retries, and no more", () => {
    const o = clean();
    o.prometheus = undefined;
    // One decode leg finished on d0 but its stream broke before the router, which retried it on d1:
    // 12 decode attempts, 11 finishes and 100 more tokens than the client received.
    o.direct.after.router!.decodeAttempts = 62;
    o.direct.after.engines.d0 = engine({ success: { stop: 23, length: 14 }, generationTokens: 3700, promptTokens: 18500 });
    expect(only(o).status).to.equal("reconciled");
    const check = reconcile(o).checks.find((c) => c.name === "decode finishes = client successes")!;
    expect(check).to.include({ client: 10, server: 11, ok: true });
    expect(check.detail).to.equal(
      'Δvllm:request_success_total{finished_reason=~"stop|length"} on decode engines d0, d1: 11; client successes 10; up to 2 more allowed for router decode attempts beyond successes (Δnarwhal_decode_attempts_total 12)',
    );
    o.direct.after.engines.d1 = engine({ success: { length: 26 }, generationTokens: 2400, promptTokens: 13000 });
    expect(only(o).failed).to.deep.equal(["decode finishes = client successes"]);
  });

  it("counts a retried prefill leg from the router's prefill attempts, in finishes and in tokens", () => {
    const o = clean();
    o.prometheus = undefined;
    o.direct.after.router!.prefillAttempts = 61;
    o.direct.after.engines.p0 = engine({ success: { length: 61, abort: 1 }, generationTokens: 61, promptTokens: 30500 });
    const r = reconcile(o);
    expect(r.status).to.equal("reconciled");
    expect(r.checks.find((c) => c.name === "generated tokens = completion tokens + prefill legs")).to.include({ client: 1011, server: 1011 });
    o.direct.after.engines.p0 = engine({ success: { length: 60, abort: 2 }, generationTokens: 60, promptTokens: 30500 });
    expect(only(o).failed).to.deep.equal(["prefill legs = router prefill attempts"]);
  });

  it("compares prefill legs with the requests sent when the router's figure is absent", () => {
    const o = clean();
    o.prometheus = undefined;
    delete o.direct.after.router;
    const check = reconcile(o).checks.find((c) => c.name === "prefill legs = router prefill attempts")!;
    expect(check).to.include({ client: 10, server: 10, ok: true });
    expect(check.detail).to.match(/router figure unavailable, so the 10 requests sent$/);
  });

  it("holds generated tokens to the token tolerance", () => {
    const o = clean();
    o.prometheus = undefined;
    o.direct.after.engines.d1.generationTokens = 2415; // 1025 against 1010: 1.5%
    expect(only(o).status).to.equal("reconciled");
    o.direct.after.engines.d1.generationTokens = 2440; // 1050 against 1010: 4%
    expect(only(o).failed).to.deep.equal(["generated tokens = completion tokens + prefill legs"]);
  });

  it("counts failed client requests as sent but not as successes or completion tokens", () => {
    const o = clean();
    o.prometheus = undefined;
    o.records[9] = record(9, false);
    o.direct.after.router = { offered: 60, served: 59, failed: 1, prefillAttempts: 60, decodeAttempts: 60 };
    // The failed request's decode leg ended in an abort on d1 after 40 tokens.
    o.direct.after.engines.d1 = engine({ success: { length: 23, abort: 1 }, generationTokens: 2340, promptTokens: 12000 });
    const r = reconcile(o);
    expect(r.status).to.equal("reconciled");
    // The aborted leg's 40 tokens fall within the 100 a decode attempt beyond the successes may add.
    const tokens = r.checks.find((c) => c.name === "generated tokens = completion tokens + prefill legs")!;
    expect(tokens).to.include({ client: 910, server: 950, ok: true });
    expect(tokens.detail).to.equal("Σ Δvllm:generation_tokens_total over 3 engines: 950; client Σ completion_tokens 900 + 10 prefill legs; tolerance 2%, plus up to 100 for 1 decode attempts beyond successes");
  });
});
