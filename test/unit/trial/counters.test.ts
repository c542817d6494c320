import { expect } from "chai";
import { countersFromPrometheus, engineCounters, routerCounters, TRIAL_QUERIES, type QueryReply, type TrialQuery, type VectorSample } from "../../../lib/trial/counters";
import { prometheusCounters } from "../../../lib/trial/prometheus";
import { Counter, Gauge, Registry } from "../../../sim/engine/metrics";
import { caught } from "./fixtures";

/**
 * An engine's /metrics in vLLM 0.29's exposition (prometheus_client): `model_name` and `engine` labels,
 * two data-parallel ranks, `finished_reason` on request_success, floats as Python prints them, and
 * `_created` samples that are not counts.
 */
const ENGINE_METRICS = `# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.76493417162e+09
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tiny"} 3.0
vllm:num_requests_running{engine="1",model_name="tiny"} 1.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="tiny"} 0.0
vllm:num_requests_waiting{engine="1",model_name="tiny"} 2.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="tiny"} 51200.0
vllm:prompt_tokens_total{engine="1",model_name="tiny"} 25600.0
vllm:prompt_tokens_created{engine="0",model_name="tiny"} 1.764934172e+09
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="tiny"} 12800.0
vllm:generation_tokens_total{engine="1",model_name="tiny"} 6400.0
# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="tiny"} 40.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="tiny"} 60.0
vllm:request_success_total{engine="0",finished_reason="abort",model_name="tiny"} 2.0
vllm:request_success_total{engine="1",finished_reason="stop",model_name="tiny"} 10.0
vllm:request_success_total{engine="1",finished_reason="length",model_name="tiny"} 40.0
vllm:request_success_total{engine="1",finished_reason="abort",model_name="tiny"} 0.0
vllm:request_success_created{engine="0",finished_reason="stop",model_name="tiny"} 1.764934172e+09
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="tiny"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="tiny"} 102.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="tiny"} 102.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="tiny"} 12.5
`;

/** The router's /metrics as narwhal.observability.metrics.traffic renders it (metric_lines: ints as ints). */
const ROUTER_METRICS = `# HELP narwhal_contract_info Machine-readable Narwhal metrics contract version
# TYPE narwhal_contract_info gauge
narwhal_contract_info{contract="metrics",version="3"} 1
# HELP narwhal_served_total Requests completed without error
# TYPE narwhal_served_total counter
narwhal_served_total 97
# HELP narwhal_slo_met_total Requests completed within the TTFT and TPOT SLOs
# TYPE narwhal_slo_met_total counter
narwhal_slo_met_total 90
# HELP narwhal_offered_total Original completion requests received, including early refusals
# TYPE narwhal_offered_total counter
narwhal_offered_total 100
# HELP narwhal_unsized_offered_total Original requests terminated before input sizing
# TYPE narwhal_unsized_offered_total counter
narwhal_unsized_offered_total 0
# HELP narwhal_prefill_attempts_total Prefill HTTP attempts including retries
# TYPE narwhal_prefill_attempts_total counter
narwhal_prefill_attempts_total 101
# HELP narwhal_decode_attempts_total Decode HTTP attempts including retries
# TYPE narwhal_decode_attempts_total counter
narwhal_decode_attempts_total 99
# HELP narwhal_retry_attempts_total Additional prefill attempts after an original attempt failed
# TYPE narwhal_retry_attempts_total counter
narwhal_retry_attempts_total 1
# HELP narwhal_attempt_failures_total Failed attempts by request phase and failure reason
# TYPE narwhal_attempt_failures_total counter
narwhal_attempt_failures_total{phase="prefill",reason="timeout"} 1
# HELP narwhal_failed_total Requests that ended in an error, by reason
# TYPE narwhal_failed_total counter
narwhal_failed_total{reason="upstream"} 2
narwhal_failed_total{reason="timeout"} 1
# HELP narwhal_cancelled_total Requests abandoned by their client before completion
# TYPE narwhal_cancelled_total counter
narwhal_cancelled_total 0
`;

describe("trial counters from /metrics", () => {
  it("sums an engine's series over vLLM's engine label, by finished_reason, ignoring _created", () => {
    expect(engineCounters(ENGINE_METRICS)).to.deep.equal({
      processStart: 1764934171.62,
      success: { stop: 50, length: 100, abort: 2 },
      generationTokens: 19200,
      promptTokens: 76800,
      running: 4,
      waiting: 2,
    });
  });

  it("reads the simulator's rendering (an unlabelled zero child before any finish)", () => {
    const r = new Registry();
    const l = { engine: "0", model_name: "tiny" };
    r.add(new Gauge("vllm:num_requests_running", "h", l, () => 0));
    r.add(new Gauge("vllm:num_requests_waiting", "h", l, () => 0));
    const prompt = r.add(new Counter("vllm:prompt_tokens", "h", l));
    const gen = r.add(new Counter("vllm:generation_tokens", "h", l));
    const success = r.add(new Counter("vllm:request_success", "h", l));
    expect(engineCounters(r.render()).success).to.deep.equal({});
    prompt.inc(500);
    gen.inc(1);
    success.inc(1, { finished_reason: "length" });
    expect(engineCounters(r.render())).to.deep.equal({ success: { length: 1 }, generationTokens: 1, promptTokens: 500, running: 0, waiting: 0 });
  });

  it("leaves processStart out when the engine runs several API servers (no process collector)", () => {
    const text = ENGINE_METRICS.replace(/^process_start_time_seconds .*$/m, "");
    expect(engineCounters(text)).to.not.have.property("processStart");
  });

  it("refuses a body without vLLM's token counters, naming the engine", () => {
    const err = caught(() => engineCounters("process_start_time_seconds 1.0\n", "engine d0 at http://10.0.0.2:8000"));
    expect(err.code).to.equal("NARWHAL_METRICS_PARSE");
    expect(err.message).to.equal("engine d0 at http://10.0.0.2:8000 /metrics has no vllm:generation_tokens_total sample: is it the right port and version?");
  });

  it("reads the router's narwhal_* counters, failed summed over its reasons", () => {
    expect(routerCounters(ROUTER_METRICS)).to.deep.equal({ offered: 100, served: 97, failed: 3, prefillAttempts: 101, decodeAttempts: 99 });
  });

  it("reads failed as zero before any request failed (the family has no sample)", () => {
    const text = ROUTER_METRICS.replace(/^narwhal_failed_total\{.*$/gm, "");
    expect(routerCounters(text).failed).to.equal(0);
  });
});

describe("trial counters from Prometheus", () => {
  const at = 1764934500;
  const vec = (rows: Array<[Record<string, string>, number]>): QueryReply => ({
    status: "success",
    data: { resultType: "vector", result: rows.map(([metric, v]): VectorSample => ({ metric, value: [at, String(v)] })) },
  });
  function replies(over: Partial<Record<TrialQuery, QueryReply>> = {}): Partial<Record<TrialQuery, QueryReply>> {
    return {
      success: vec([
        [{ iid: "p0", finished_reason: "length" }, 100],
        [{ iid: "d0", finished_reason: "stop" }, 60],
        [{ iid: "d0", finished_reason: "length" }, 40],
      ]),
      generationTokens: vec([[{ iid: "p0" }, 100], [{ iid: "d0" }, 12800]]),
      promptTokens: vec([[{ iid: "p0" }, 51200], [{ iid: "d0" }, 51200]]),
      running: vec([[{ iid: "p0" }, 0], [{ iid: "d0" }, 0]]),
      waiting: vec([[{ iid: "p0" }, 0], [{ iid: "d0" }, 0]]),
      processStart: vec([[{ iid: "p0" }, 1764934171.62], [{ iid: "d0" }, 1764934172.5]]),
      engineUp: vec([[{ iid: "p0" }, 1], [{ iid: "d0" }, 1]]),
      engineScrapedAt: vec([[{ iid: "p0" }, at - 2], [{ iid: "d0" }, at - 1]]),
      routerOffered: vec([[{}, 100]]),
      routerServed: vec([[{}, 100]]),
      routerFailed: vec([]),
      routerPrefillAttempts: vec([[{}, 100]]),
      routerDecodeAttempts: vec([[{}, 100]]),
      routerUp: vec([[{}, 1]]),
      routerScrapedAt: vec([[{}, at - 3]]),
      ...over,
    };
  }

  it("takes the counters from a read made after the new scrape was seen: a read's queries may straddle it", async () => {
    const keys = Object.keys(TRIAL_QUERIES) as TrialQuery[];
    // The first read's token query is answered before the scrape landed, its scrape-time query after.
    const straddling = replies({ generationTokens: vec([[{ iid: "p0" }, 100], [{ iid: "d0" }, 12416]]) });
    const settled = replies();
    let calls = 0;
    const get = async (url: string) => {
      const key = keys.find((k) => url.endsWith(`query=${encodeURIComponent(TRIAL_QUERIES[k])}`))!;
      const reply = (calls++ < keys.length ? straddling : settled)[key];
      return { status: 200, body: JSON.stringify(reply) };
    };
    const read = await prometheusCounters(get, "http://prometheus", { sinceMs: (at - 5) * 1000, boundS: 5, iids: ["p0", "d0"] });
    expect(read.problems).to.deep.equal([]);
    expect(read.snapshot!.engines.d0.generationTokens).to.equal(12800);
    expect(calls, "two reads").to.equal(2 * keys.length);
  });

  it("queries by the iid label on the engines job and the router job", () => {
    expect(TRIAL_QUERIES.success).to.equal('sum by (iid, finished_reason) (vllm:request_success_total{job="engines"})');
    expect(TRIAL_QUERIES.routerOffered).to.equal('sum(narwhal_offered_total{job="narwhal-router"})');
    expect(TRIAL_QUERIES.engineScrapedAt).to.equal('max by (iid) (timestamp(up{job="engines"}))');
  });

  it("turns the vector replies into a snapshot keyed by iid", () => {
    const { snapshot, problems } = countersFromPrometheus(replies(), { at: "2025-12-05T11:35:00.000Z", iids: ["p0", "d0"], scrapedAfterS: at - 5 });
    expect(problems).to.deep.equal([]);
    expect(snapshot).to.deep.equal({
      at: "2025-12-05T11:35:00.000Z",
      engines: {
        p0: { processStart: 1764934171.62, success: { length: 100 }, generationTokens: 100, promptTokens: 51200, running: 0, waiting: 0 },
        d0: { processStart: 1764934172.5, success: { stop: 60, length: 40 }, generationTokens: 12800, promptTokens: 51200, running: 0, waiting: 0 },
      },
      router: { offered: 100, served: 100, failed: 0, prefillAttempts: 100, decodeAttempts: 100 },
    });
  });

  it("names a target down, a missing target, a stale scrape and a failed query as problems", () => {
    const { snapshot, problems } = countersFromPrometheus(
      replies({
        engineUp: vec([[{ iid: "p0" }, 0]]),
        routerScrapedAt: vec([[{}, at - 30]]),
        routerServed: { status: "error", errorType: "timeout", error: "query timed out" },
      }),
      { at: "t", iids: ["p0", "d0"], scrapedAfterS: at - 5 },
    );
    expect(problems).to.deep.equal([
      `Prometheus query ${TRIAL_QUERIES.routerServed} failed: timeout: query timed out`,
      "Prometheus target for engine p0 is down (up=0)",
      "Prometheus has no scrape target for engine d0 (job engines)",
      `Prometheus has not scraped the router since ${new Date((at - 5) * 1000).toISOString()}`,
      "Prometheus holds no narwhal_offered/served/prefill_attempts/decode_attempts series for the router",
    ]);
    expect(Object.keys(snapshot.engines)).to.deep.equal(["p0"]);
    expect(snapshot).to.not.have.property("router");
  });
});
