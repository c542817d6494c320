import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { prefillTime, tokenInterval } from "../../../lib/preflight/judge";
import { decodeRequestLimit, departure, pointRange, predictedCurve, predictPoint, profiledRange, rangeProblems, type PredictEngine } from "../../../lib/trial/predict";
import type { TrialPoint } from "../../../lib/trial/types";
import { caught, row, summary } from "./fixtures";

const PYTHON = resolve(__dirname, "../../../.tools/venv/bin/python");

const pd = (prefill = [row("p0")], decode = [row("d0")]): PredictEngine[] => [
  ...prefill.map((r) => ({ role: "prefill" as const, row: r })),
  ...decode.map((r) => ({ role: "decode" as const, row: r })),
];

function point(over: Partial<TrialPoint> = {}): TrialPoint {
  return { id: "p1", rate: 2, requests: 100, arrival: "poisson", seed: 7, mix: [{ promptTokens: 500, outputTokens: 100, weight: 1 }], ...over };
}

describe("trial prediction from the profile fits", () => {
  it("matches a case computed by hand (one prefill, one decode, Poisson, one class)", () => {
    // Prefill S = 0.01 + 500 * 0.0001 = 0.06 s; rho = 2 * 0.06 = 0.12; P-K wait = 2 * 0.06^2 / (2 * 0.88).
    // Decode: n = 2 * 100 * (0.02 + 0.001 n) gives n = 5 and interval 0.025 s.
    const p = predictPoint(pd(), point());
    const wait = (2 * 0.06 ** 2) / (2 * 0.88);
    expect(p.prefillUtilisation).to.be.closeTo(0.12, 1e-12);
    expect(p.decodeRequestsPerEngine).to.be.closeTo(5, 1e-9);
    expect(p.tpotS).to.be.closeTo(0.025, 1e-12);
    expect(p.ttftS).to.be.closeTo(wait + 0.06 + 0.025, 1e-12);
    expect(p.e2elS).to.be.closeTo(wait + 0.06 + 0.025 + 99 * 0.025, 1e-9);
  });

  it("has no prefill wait for constant arrivals of one length (deterministic service, no arrival variance)", () => {
    const p = predictPoint(pd(), point({ arrival: "constant" }));
    expect(p.ttftS).to.be.closeTo(0.06 + 0.025, 1e-12);
  });

  it("splits the arrivals over the engines of each role", () => {
    // Two prefill engines at 1 req/s each: rho 0.06; two decode engines: n = 100 * (0.02 + 0.001 n) = 2 / 0.9
    const p = predictPoint(pd([row("p0"), row("p1")], [row("d0"), row("d1")]), point());
    expect(p.prefillUtilisation).to.be.closeTo(0.06, 1e-12);
    expect(p.decodeRequestsPerEngine).to.be.closeTo(2 / 0.9, 1e-9);
    expect(p.ttftS).to.be.closeTo(0.0036 / (2 * 0.94) + 0.06 + 0.02 + 0.001 * (2 / 0.9), 1e-12);
  });

  it("floors the decode batch at the smallest measured batch, as Narwhal's decode_rps does", () => {
    // At 0.01 req/s the time-average batch is 0.0202 requests; the interval is the 4-request one.
    const p = predictPoint(pd([row("p0")], [row("d0", { decode_min_requests: 4 })]), point({ rate: 0.01 }));
    expect(p.tpotS).to.be.closeTo(0.024, 1e-12);
  });

  it("mixes classes: P-K over the mix, the context weighted by output, TTFT and E2EL mix-weighted", () => {
    const mix = [
      { promptTokens: 100, outputTokens: 50, weight: 3 },
      { promptTokens: 1000, outputTokens: 200, weight: 1 },
    ];
    const p = predictPoint(pd(), point({ rate: 1, mix }));
    const s = [0.02, 0.11];
    const es = 0.75 * s[0] + 0.25 * s[1];
    const es2 = 0.75 * s[0] ** 2 + 0.25 * s[1] ** 2;
    const wait = es2 / (2 * (1 - es));
    const eo = 0.75 * 50 + 0.25 * 200;
    const n = (eo * 0.02) / (1 - eo * 0.001);
    const tau = 0.02 + 0.001 * n;
    expect(p.decodeRequestsPerEngine).to.be.closeTo(n, 1e-9);
    expect(p.ttftS).to.be.closeTo(wait + es + tau, 1e-12);
    expect(p.e2elS).to.be.closeTo(wait + es + tau + (0.75 * 49 + 0.25 * 199) * tau, 1e-9);
  });

  it("prices rows exactly as narwhal-inference's Profile does (prefill_time, token_interval, decode_request_limit)", () => {
    const r = row("d0", { ttft_a: 1e-8, tpot_slope: 1e-6, decode_max_kv_tokens: 9050, kv_capacity_tokens: 20000, ttft_block_tokens: 16, ttft_split: 0.003 });
    const py = `
import json, sys
from narwhal.profiling.model import Profile
p = Profile(**json.loads(sys.argv[1]))
print(json.dumps([p.prefill_time(500), p.prefill_time(8), p.prefill_time(512), p.token_interval(5 * 550, 5), p.decode_request_limit(905), p.decode_request_limit(100000), p.decode_request_limit(300)]))`;
    const theirs = JSON.parse(execFileSync(PYTHON, ["-c", py, JSON.stringify(r)], { encoding: "utf8" })) as number[];
    const ours = [prefillTime(r, 500), prefillTime(r, 8), prefillTime(r, 512), tokenInterval(r, 5 * 550, 5), decodeRequestLimit(r, 905), decodeRequestLimit(r, 100000), decodeRequestLimit(r, 300)];
    expect(ours).to.deep.equal(theirs);
  });

  it("is monotonic in rate: TTFT, TPOT and the resident batch never fall as the rate rises", () => {
    const engines = pd([row("p0", { ttft_a: 1e-8 })], [row("d0", { tpot_slope: 1e-6 })]);
    const batches = [0.5, 1, 2, 3, 4, 5].map((rate) => predictPoint(engines, point({ rate })).decodeRequestsPerEngine);
    for (let i = 1; i < batches.length; i++) expect(batches[i]).to.be.greaterThan(batches[i - 1]);
    const curve = predictedCurve(engines, point());
    expect(curve).to.have.length(12);
    for (let i = 1; i < curve.length; i++) {
      expect(curve[i].rate).to.be.greaterThan(curve[i - 1].rate);
      expect(curve[i].ttftS).to.be.greaterThan(curve[i - 1].ttftS);
      expect(curve[i].tpotS).to.be.greaterThan(curve[i - 1].tpotS);
    }
    const range = profiledRange(engines, point().mix);
    expect(curve[11].rate).to.be.closeTo(range.maxRate, 1e-12);
    expect(curve[0].rate).to.be.closeTo(range.maxRate / 12, 1e-12);
  });
});

describe("trial profiled range", () => {
  it("takes the intersection of the prefill and decode rows' measured sweeps", () => {
    const range = profiledRange(pd([row("p0", { prefill_min_tokens: 32, prefill_max_tokens: 2048 }), row("p1", { prefill_min_tokens: 64, prefill_max_tokens: 4096 })], [row("d0", { decode_min_output_tokens: 8, decode_max_output_tokens: 512 }), row("d1")]), point().mix);
    expect(range.promptTokens).to.deep.equal([64, 2048]);
    expect(range.outputTokens).to.deep.equal([8, 512]);
  });

  it("limits the rate by the decode rows' measured requests: 64 = lambda * 100 * (0.02 + 0.064)", () => {
    expect(profiledRange(pd(), point().mix).maxRate).to.be.closeTo(64 / 8.4, 1e-9);
  });

  it("limits the rate by the decode rows' KV tokens over the output-weighted context (Narwhal's decode_request_limit)", () => {
    // Context (50 * 125 + 200 * 1100) / 250 = 905 tokens; 9050 KV tokens hold 10 requests.
    const mix = [
      { promptTokens: 100, outputTokens: 50, weight: 1 },
      { promptTokens: 1000, outputTokens: 200, weight: 1 },
    ];
    const decode = row("d0", { decode_max_kv_tokens: 9050 });
    expect(decodeRequestLimit(decode, 905)).to.equal(10);
    expect(profiledRange(pd([row("p0")], [decode]), mix).maxRate).to.be.closeTo(10 / (125 * 0.03), 1e-9);
  });

  it("limits the rate by prefill saturation when prefill is the bottleneck", () => {
    // S = 0.01 + 4000 * 0.0001 = 0.41 s: prefill saturates at 2.439 req/s, long before decode's limit.
    const range = profiledRange(pd(), [{ promptTokens: 4000, outputTokens: 1, weight: 1 }]);
    expect(range.maxRate).to.be.closeTo(1 / 0.41, 1e-9);
    expect(range.maxRate).to.be.lessThan(1 / 0.41);
  });

  it("without a mix, judges the rate for the most demanding corner (longest prompt and output)", () => {
    const corner = profiledRange(pd(), [{ promptTokens: 4096, outputTokens: 1024, weight: 1 }]);
    expect(profiledRange(pd()).maxRate).to.equal(corner.maxRate);
  });

  it("names the point, the field, the value, the range and the fix for each refusal", () => {
    const p = point({ rate: 9, mix: [{ promptTokens: 500, outputTokens: 100, weight: 1 }, { promptTokens: 8000, outputTokens: 2000, weight: 1 }] });
    const range = { promptTokens: [16, 4096] as [number, number], outputTokens: [1, 1024] as [number, number], maxRate: 7.619 };
    expect(rangeProblems(p, range, 2)).to.deep.equal([
      "trial.points[2].rate 9 req/s is above 7.619 req/s, the highest rate for this mix whose predicted decode batch stays within the profiled decode requests and KV tokens with prefill below saturation; lower the rate, or profile a wider decode sweep (more concurrency) or add engines",
      "trial.points[2].mix[1].promptTokens 8000 is outside the profiled prefill sweep [16, 4096]; use a prompt length within it, or profile a wider prefill sweep",
      "trial.points[2].mix[1].outputTokens 2000 is outside the profiled decode outputs [1, 1024]; use an output length within it, or profile a wider decode sweep",
    ]);
    expect(rangeProblems(point({ mix: [{ promptTokens: 8, outputTokens: 100, weight: 1 }] }), range)[0]).to.match(/^trial\.points\[id=p1\]\.mix\[0\]\.promptTokens 8 is outside/);
  });

  it("judges a point by the range for its own mix: the range, and each field outside it", () => {
    const engines = pd([row("p0", { prefill_min_tokens: 32, prefill_max_tokens: 2048 })], [row("d0", { decode_min_output_tokens: 8, decode_max_output_tokens: 512 })]);
    const within = pointRange(engines, point());
    expect(within.range.promptTokens).to.deep.equal([32, 2048]);
    expect(within.range.outputTokens).to.deep.equal([8, 512]);
    expect(within.range.maxRate).to.equal(profiledRange(engines, point().mix).maxRate);
    expect(within.problems).to.deep.equal([]);
    const mix = [{ promptTokens: 4000, outputTokens: 4, weight: 1 }];
    const outside = pointRange(engines, point({ mix }), 1);
    expect(outside.range).to.deep.equal(profiledRange(engines, mix));
    expect(outside.problems).to.deep.equal([
      "trial.points[1].mix[0].promptTokens 4000 is outside the profiled prefill sweep [32, 2048]; use a prompt length within it, or profile a wider prefill sweep",
      "trial.points[1].mix[0].outputTokens 4 is outside the profiled decode outputs [8, 512]; use an output length within it, or profile a wider decode sweep",
    ]);
  });

  it("refuses to predict outside the range, with code NARWHAL_TRIAL_RANGE", () => {
    const err = caught(() => predictPoint(pd(), point({ rate: 8 }), 0));
    expect(err.code).to.equal("NARWHAL_TRIAL_RANGE");
    expect(err.message).to.match(/^trial\.points\[0\]\.rate 8 req\/s is above 7\.619 req\/s/);
  });

  it("needs a profiled engine of each role", () => {
    const err = caught(() => profiledRange([{ role: "decode", row: row("d0") }]));
    expect(err.code).to.equal("NARWHAL_TRIAL_PREDICT");
    expect(err.message).to.match(/^no prefill-role engine with a profile row/);
  });
});

describe("trial departure from prediction", () => {
  const prediction = { ttftS: 0.08, tpotS: 0.025, e2elS: 2.5, decodeRequestsPerEngine: 5, prefillUtilisation: 0.12 };

  it("is the relative difference of the medians, flagged past the bound", () => {
    const d = departure(prediction, summary({ median_ttft_ms: 100, median_tpot_ms: 25 }), 0.2);
    expect(d.ttft).to.be.closeTo(0.25, 1e-12);
    expect(d.tpot).to.be.closeTo(0, 1e-12);
    expect(d).to.include({ bound: 0.2, flagged: true });
  });

  it("is not flagged within the bound, either side of the prediction", () => {
    const d = departure(prediction, summary({ median_ttft_ms: 72, median_tpot_ms: 27.5 }), 0.2);
    expect(d.ttft).to.be.closeTo(0.1, 1e-12);
    expect(d.tpot).to.be.closeTo(0.1, 1e-12);
    expect(d.flagged).to.equal(false);
  });

  it("refuses a bound that is not positive", () => {
    expect(caught(() => departure(prediction, summary(), 0)).message).to.equal("departure bound 0: give a positive relative difference (0.5 is 50%)");
  });
});
