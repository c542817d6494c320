import { expect } from "chai";
import { achievedSendRate, maxConcurrent, percentile, summarise } from "../../../lib/trial/summary";
import type { ClientRun, RequestRecord } from "../../../lib/trial/types";

// Times are multiples of 1/16 s, exact in binary, so inclusive SLO bounds compare exactly.
const rec = (over: Partial<RequestRecord> & Pick<RequestRecord, "index" | "dueS" | "sentS" | "endS">): RequestRecord => ({
  requestId: `t-${over.index}`,
  promptTokens: 99,
  outputTokens: 99,
  chunkGapsS: [],
  status: "ok",
  ...over,
});

const records: RequestRecord[] = [
  // A: chunks at 0.25, 0.375, 0.5, 0.625: ttft 125 ms, e2el 500 ms, tpot (500 - 125) / 3 = 125 ms.
  rec({ index: 0, dueS: 0.125, sentS: 0.125, firstTokenS: 0.25, endS: 0.625, chunkGapsS: [0.125, 0.125, 0.125], usage: { promptTokens: 10, completionTokens: 4 } }),
  // B: one token: ttft 250 ms, e2el 250 ms, in no TPOT list, TPOT 0 for goodput.
  rec({ index: 1, dueS: 0.25, sentS: 0.25, firstTokenS: 0.5, endS: 0.5, usage: { promptTokens: 5, completionTokens: 1 } }),
  // C: failed last of all: counts in duration and send figures only.
  rec({ index: 2, dueS: 0.375, sentS: 0.375, endS: 1.25, status: "error", httpStatus: 500, error: "HTTP 500: x", usage: { promptTokens: 1000, completionTokens: 1000 } }),
  // D: sent 62.5 ms late; chunks at 0.625, 0.875, 1.125: ttft 62.5 ms, e2el 562.5 ms, tpot (562.5 - 62.5) / 2 = 250 ms.
  rec({ index: 3, dueS: 0.5, sentS: 0.5625, firstTokenS: 0.625, endS: 1.125, chunkGapsS: [0.25, 0.25], usage: { promptTokens: 20, completionTokens: 3 } }),
];

const run: ClientRun = {
  start: { wallMs: 1000, monoS: 0 },
  end: { wallMs: 2250, monoS: 1.25 },
  records,
  eventLoopDelayMs: { p50: 0.1, p99: 1.5, max: 3.25 },
  settings: { arrival: "constant", seed: 1, requestTimeoutS: 30, connections: 4 },
};

const popStd = (xs: number[]) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / xs.length);
};

describe("trial: summary", () => {
  it("computes vllm bench's figures over successes only, with duration to the last end of any request", () => {
    const s = summarise(run, { ttftS: 0.25, tpotS: 0.125 });
    expect(s.duration).to.equal(1.25);
    expect(s.completed).to.equal(3);
    expect(s.failed).to.equal(1);
    expect(s.total_input_tokens).to.equal(35);
    expect(s.total_output_tokens).to.equal(8);
    expect(s.request_throughput).to.equal(3 / 1.25);
    expect(s.output_throughput).to.equal(8 / 1.25);
    expect(s.total_token_throughput).to.equal(43 / 1.25);

    expect(s.mean_ttft_ms).to.be.closeTo(437.5 / 3, 1e-9);
    expect(s.median_ttft_ms).to.equal(125);
    expect(s.p50_ttft_ms).to.equal(125);
    expect(s.std_ttft_ms).to.be.closeTo(popStd([62.5, 125, 250]), 1e-9);
    expect(s.p90_ttft_ms).to.be.closeTo(225, 1e-9); // index 1.8: 125 + 0.8 * 125
    expect(s.p99_ttft_ms).to.be.closeTo(247.5, 1e-9);

    expect(s.mean_tpot_ms).to.equal(187.5);
    expect(s.median_tpot_ms).to.equal(187.5);
    expect(s.std_tpot_ms).to.equal(62.5);
    expect(s.p90_tpot_ms).to.be.closeTo(237.5, 1e-9);
    expect(s.p99_tpot_ms).to.be.closeTo(248.75, 1e-9);

    // ITL pools every chunk gap: [125, 125, 125, 250, 250].
    expect(s.mean_itl_ms).to.equal(175);
    expect(s.median_itl_ms).to.equal(125);
    expect(s.std_itl_ms).to.be.closeTo(Math.sqrt(3750), 1e-9);
    expect(s.p90_itl_ms).to.equal(250);

    expect(s.mean_e2el_ms).to.equal(437.5);
    expect(s.median_e2el_ms).to.equal(500);
    expect(s.p90_e2el_ms).to.be.closeTo(550, 1e-9);
    expect(s.p99_e2el_ms).to.be.closeTo(561.25, 1e-9);

    // Successes overlap at most two at a time: A with B, then A with D.
    expect(s.max_concurrent_requests).to.equal(2);
    // Lags [0, 0, 0, 62.5] ms; sends span 0.125 .. 0.5625 s.
    expect(s.p50_send_lag_ms).to.equal(0);
    expect(s.p99_send_lag_ms).to.be.closeTo(60.625, 1e-9);
    expect(s.max_send_lag_ms).to.equal(62.5);
    expect(s.achieved_send_rate).to.equal(4 / 0.4375);
    expect(s.p99_event_loop_delay_ms).to.equal(1.5);
    expect(s.max_event_loop_delay_ms).to.equal(3.25);
  });

  it("counts a request good when TTFT and TPOT are both within the SLO, inclusive, a one-token request's TPOT being 0", () => {
    // A sits exactly on both bounds; B is one token (TPOT 0) with TTFT 250 ms; D's TPOT is 250 ms.
    let s = summarise(run, { ttftS: 0.25, tpotS: 0.125 });
    expect(s.good).to.equal(2);
    expect(s.request_goodput).to.equal(2 / 1.25);
    expect(s.good_fraction).to.equal(0.5);
    s = summarise(run, { ttftS: 0.125, tpotS: 0.125 });
    expect(s.good).to.equal(1);
    s = summarise(run, { ttftS: 0.0625, tpotS: 1 });
    expect(s.good).to.equal(1); // only D: the failed C is never good, whatever its figures
    s = summarise(run, { ttftS: 0, tpotS: 0 });
    expect([s.good, s.request_goodput, s.good_fraction]).to.deep.equal([0, 0, 0]);
  });

  it("gives zeros for a point without successes, and without requests", () => {
    const failed = summarise({ ...run, records: [records[2]] }, { ttftS: 1, tpotS: 1 });
    expect([failed.completed, failed.failed, failed.duration, failed.mean_ttft_ms, failed.p99_itl_ms, failed.request_throughput, failed.max_concurrent_requests]).to.deep.equal([0, 1, 1.25, 0, 0, 0, 0]);
    const none = summarise({ ...run, records: [] }, { ttftS: 1, tpotS: 1 });
    expect([none.duration, none.good_fraction, none.achieved_send_rate, none.p99_send_lag_ms, none.median_e2el_ms]).to.deep.equal([0, 0, 0, 0, 0]);
  });

  it("falls back to one token per choice chunk when a success had no usage chunk", () => {
    const noUsage = { ...records[0], usage: undefined };
    const s = summarise({ ...run, records: [noUsage] }, { ttftS: 1, tpotS: 1 });
    expect(s.total_output_tokens).to.equal(4);
    expect(s.total_input_tokens).to.equal(99);
    expect(s.mean_tpot_ms).to.equal(125);
  });
});

describe("trial: summary pieces", () => {
  it("takes percentiles by numpy's default linear interpolation", () => {
    // numpy.percentile(a, p), method "linear" (Hyndman & Fan type 7, the same as Python's
    // statistics.quantiles(method="inclusive")): index (n - 1) p / 100 between the two neighbours.
    const a = [0.5, 1.0, 3.2, 4.4, 7.75, 9.1, 12.5];
    const expected: Array<[number, number]> = [[0, 0.5], [10, 0.8], [20, 1.44], [30, 2.76], [40, 3.68], [50, 4.4], [60, 6.41], [70, 8.02], [80, 8.83], [90, 10.46], [99, 12.296], [100, 12.5]];
    for (const [p, v] of expected) expect(percentile(a, p), `p${p}`).to.be.closeTo(v, 1e-9);
    expect(percentile([], 99)).to.equal(0);
    expect(percentile([7], 99)).to.equal(7);
  });

  it("frees an interval's slot before a start at the same instant", () => {
    const r = (sentS: number, endS: number) => rec({ index: 0, dueS: sentS, sentS, endS });
    expect(maxConcurrent([r(0, 1), r(1, 2), r(2, 3)])).to.equal(1);
    expect(maxConcurrent([r(0, 3), r(1, 2), r(1.5, 4), r(3, 5)])).to.equal(3);
  });

  it("measures the achieved send rate over the sends' span, or from the start with a single send", () => {
    const r = (sentS: number) => rec({ index: 0, dueS: sentS, sentS, endS: sentS + 1 });
    expect(achievedSendRate([r(0.5), r(1), r(1.5)])).to.equal(3);
    expect(achievedSendRate([r(0.25)])).to.equal(4);
    expect(achievedSendRate([r(0)])).to.equal(0);
  });
});
