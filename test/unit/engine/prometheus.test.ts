import { expect } from "chai";
import { cacheConfigInfo, findSample, gaugeValue, kvCacheUsage, parsePrometheusText, processStartTime } from "../../../lib/engine/prometheus";
import { RECORDED, RECORDED_START } from "./helpers";

function parseError(text: string): { code?: string; message: string } {
  try {
    parsePrometheusText(text);
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error("expected a parse error");
}

describe("engine /metrics parsing", () => {
  const samples = parsePrometheusText(RECORDED["/metrics"].body);

  it("reads process_start_time_seconds from a recorded vLLM-format body (exponent form)", () => {
    expect(processStartTime(samples)).to.equal(RECORDED_START);
  });

  it("reads every vllm:cache_config_info label as a string", () => {
    const labels = cacheConfigInfo(samples)!;
    expect(labels).to.include({ block_size: "16", num_gpu_blocks: "4755237", cache_dtype: "auto", enable_prefix_caching: "True", num_cpu_blocks: "None" });
    expect(labels).to.include({ kv_cache_size_tokens: "76083792", kv_cache_max_concurrency: "18575.14453125", kv_cache_layout: "None", engine: "0" });
    expect(Object.keys(labels)).to.have.length(24);
  });

  it("reads gauges by name and labels, and KV usage under either name", () => {
    expect(gaugeValue(samples, "vllm:num_requests_running", { model_name: "tiny", engine: "0" })).to.equal(0);
    expect(gaugeValue(samples, "vllm:num_requests_running", { model_name: "other" })).to.equal(undefined);
    expect(kvCacheUsage(samples)).to.equal(0);
    expect(kvCacheUsage(parsePrometheusText('vllm:gpu_cache_usage_perc{engine="0"} 0.25\n'))).to.equal(0.25);
    expect(gaugeValue(samples, "vllm:time_to_first_token_seconds_count")).to.equal(0);
  });

  it("has no process identity in multiprocess mode (no process_* series)", () => {
    const body = RECORDED["/metrics"].body.split("\n").filter((l) => !l.includes("process_")).join("\n");
    expect(processStartTime(parsePrometheusText(body))).to.equal(undefined);
  });

  it("parses escapes, a trailing comma, timestamps and special values", () => {
    const s = parsePrometheusText(
      [
        "# HELP x a, b",
        'x{a="q\\"uo,te",b="back\\\\slash",c="new\\nline"} +Inf 1700000000000',
        'y{a="1",} NaN',
        "z -1.5e-3",
        "w{} -Inf",
      ].join("\n"),
    );
    expect(s[0]).to.deep.equal({ name: "x", labels: { a: 'q"uo,te', b: "back\\slash", c: "new\nline" }, value: Infinity });
    expect(findSample(s, "z")!.value).to.equal(-0.0015);
    expect(Number.isNaN(findSample(s, "y")!.value)).to.equal(true);
    expect(findSample(s, "w")!.value).to.equal(-Infinity);
  });

  it("names the malformed line", () => {
    const cases: Array<[string, string]> = [
      ["ok 1\nbad value", '/metrics line 2: "value" is not a number: "bad value"'],
      ['x{a="1" 2', '/metrics line 1: expected "," or "}" after label a: "x{a=\\"1\\" 2"'],
      ['x{a=1} 2', '/metrics line 1: expected ="..." after label a: "x{a=1} 2"'],
      ["{a=\"1\"} 2", '/metrics line 1: expected a metric name: "{a=\\"1\\"} 2"'],
      ["x 1 2 3", '/metrics line 1: expected a value and an optional timestamp: "x 1 2 3"'],
      ['x{a="1",a="2"} 1', '/metrics line 1: label a appears twice: "x{a=\\"1\\",a=\\"2\\"} 1"'],
    ];
    for (const [text, message] of cases) {
      const err = parseError(text);
      expect(err.code).to.equal("NARWHAL_METRICS_PARSE");
      expect(err.message).to.equal(message);
    }
  });
});
