import { expect } from "chai";
import { Counter, formatValue, Histogram, Registry } from "../../../sim/engine/metrics";

describe("sim-engine metrics text", () => {
  it("prints floats like prometheus_client", () => {
    const cases: Array<[number, string]> = [
      [0, "0.0"],
      [1, "1.0"],
      [8192, "8192.0"],
      [0.92, "0.92"],
      [1e-5, "1e-05"],
      [10_000_000, "1e+07"],
      [1732870000.5, "1.7328700005e+09"],
      [Infinity, "+Inf"],
    ];
    for (const [x, s] of cases) expect(formatValue(x), String(x)).to.equal(s);
  });

  it("renders counters with _total and histograms with cumulative buckets", () => {
    const r = new Registry();
    const c = r.add(new Counter("vllm:prompt_tokens", "Prompt tokens.", { engine: "0", model_name: "m" }));
    const h = r.add(new Histogram("vllm:x_seconds", "X.", { engine: "0" }, [0.1, 1]));
    c.inc(5);
    h.observe(0.05);
    h.observe(0.5);
    h.observe(5);
    expect(r.render().split("\n")).to.include.members([
      "# TYPE vllm:prompt_tokens_total counter",
      'vllm:prompt_tokens_total{engine="0",model_name="m"} 5.0',
      'vllm:x_seconds_bucket{engine="0",le="0.1"} 1.0',
      'vllm:x_seconds_bucket{engine="0",le="1.0"} 2.0',
      'vllm:x_seconds_bucket{engine="0",le="+Inf"} 3.0',
      'vllm:x_seconds_count{engine="0"} 3.0',
      'vllm:x_seconds_sum{engine="0"} 5.55',
    ]);
  });
});
