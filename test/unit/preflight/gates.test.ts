/**
 * Gate verdicts on fixed observations: each gate passing and failing, pace against the median or the
 * saved profile (small fleets need profiles), a failed pre-transfer gate blocking both KV gates, TPOT
 * against the measured floor, the calibration formula, and narwhal-check's report read per gate.
 */
import { expect } from "chai";
import { calibrate, groupCandidate, nearestRank, observationBoundProblem } from "../../../lib/preflight/calibration";
import { parseNarwhalReport } from "../../../lib/preflight/narwhal-report";
import { runPreflight, type Observer, type PreflightPlan } from "../../../lib/preflight/run";
import type { GateProfile } from "../../../lib/preflight/judge";
import type { Probe } from "../../../lib/preflight/pairs";
import type { TransferRecord } from "../../../lib/preflight/transfer";

const profile = (iid: string, over: Partial<GateProfile> = {}): GateProfile => ({
  iid,
  ttft_a: 2e-8,
  ttft_b: 6e-5,
  ttft_c: 0.005,
  tpot_slope: 3e-6,
  tpot_intercept: 0.012,
  tpot_request_slope: 0.002,
  generation_digest: `sha256:${iid}`,
  decode_min_requests: 1,
  decode_max_requests: 8,
  decode_min_kv_tokens: 300,
  decode_max_kv_tokens: 9000,
  decode_fit_mape: 0.01,
  decode_cv_mape: 0.02,
  ...over,
});

function plan(n: number, over: Partial<PreflightPlan> = {}): PreflightPlan {
  const engines = Array.from({ length: n }, (_, i): PreflightPlan["engines"][number] => ({ iid: `e${i}`, role: i === 0 ? "prefill" : "decode" }));
  return {
    engines,
    model: "tiny",
    slo: { ttftS: 10, tpotS: 0.125 },
    tokenize: true,
    policy: { maxDecodeFitMape: 0.05, maxDecodeCvMape: 0.13 },
    profiles: new Map(engines.map((e) => [e.iid, profile(e.iid)])),
    contract: null,
    pairs: "mesh",
    repeats: 1,
    schedule: "concurrent",
    timeouts: { firstTokenS: 2.5, requestS: 600 },
    ...over,
  };
}

/** A healthy fleet's observations; tests override one behaviour each. */
function observer(over: Partial<Observer> = {}): Observer {
  return {
    health: async () => true,
    contract: async () => ({ version: "0.29.0", problems: [] }),
    generation: async (iid) => ({ digest: `sha256:${iid}` }),
    models: async () => ["tiny"],
    pace: async () => ({ seconds: 0.6, promptTokens: 4096 }),
    tokenize: async () => 64,
    produce: async () => ({ parameters: ["remote_engine_id", "remote_block_ids"] }),
    transfer: async (p: Probe): Promise<TransferRecord> => ({ ...p, status: "passed", firstTokenSeconds: 0.05, tokens: 4 }),
    ...over,
  };
}

const verdicts = async (p: PreflightPlan, o: Observer) => Object.fromEntries((await runPreflight(p, o)).gates.map((g) => [g.gate, g.verdict]));
// calibration passes with its warning (no first-token calibration named): a warning changes no outcome.
const PASS_ALL = { reach: "pass", calibration: "pass", contract: "pass", profile: "pass", model: "pass", pace: "pass", tokenize: "pass", produce: "pass", consume: "pass", slo: "pass" };

describe("preflight: gate verdicts", () => {
  it("passes every gate on a healthy profiled fleet and probes the whole mesh", async () => {
    const out = await runPreflight(plan(4), observer());
    expect(Object.fromEntries(out.gates.map((g) => [g.gate, g.verdict]))).to.deep.equal(PASS_ALL);
    expect(out.transfers).to.have.length(12);
    expect(out.rounds).to.equal(6);
  });

  it("a dead engine fails reach and blocks nothing it never reached; KV gates run without it", async () => {
    const v = await runPreflight(plan(3), observer({ health: async (iid) => iid !== "e2" }));
    const g = Object.fromEntries(v.gates.map((x) => [x.gate, x]));
    expect(g.reach.verdict).to.equal("fail");
    expect(g.reach.lines.find((l) => l.status === "fail")!.message).to.equal("e2 /health did not answer 200");
    expect(v.transfers.map((t) => `${t.producer}>${t.consumer}`)).to.deep.equal(["e0>e1", "e1>e0"]);
  });

  it("a model mismatch fails model and skips both KV gates", async () => {
    const v = await verdicts(plan(3), observer({ models: async (iid) => (iid === "e1" ? ["other"] : ["tiny"]) }));
    expect(v).to.include({ model: "fail", produce: "skip", consume: "skip", slo: "pass" });
  });

  it("pace: three probes compare with the fleet median; a slow engine fails and blocks transfers", async () => {
    const slow = observer({ pace: async (iid) => ({ seconds: iid === "e1" ? 2.0 : 0.6, promptTokens: 4096 }) });
    const out = await runPreflight(plan(3, { profiles: new Map() }), slow);
    const pace = out.gates.find((g) => g.gate === "pace")!;
    expect(pace.verdict).to.equal("fail");
    expect(pace.lines.map((l) => l.message)).to.include("e1 pace: 2.00s against a fleet median of 0.60s (> 1.5x) - throttle or degradation exceeds observed fleet pace");
    expect(out.gates.find((g) => g.gate === "consume")!.verdict).to.equal("skip");
  });

  it("pace: engines on distinct devices are probed at once, engines sharing a device one after the other", async () => {
    const running = new Set<string>();
    const overlaps: string[][] = [];
    const pace = async (iid: string) => {
      running.add(iid);
      overlaps.push([...running].sort());
      await new Promise((r) => setImmediate(r));
      running.delete(iid);
      return { seconds: 0.6, promptTokens: 4096 };
    };
    const shared = plan(4, { profiles: new Map() });
    const grouped = { ...shared, engines: shared.engines.map((e) => (e.iid === "e2" || e.iid === "e3" ? { ...e, deviceGroup: "gpu0" } : e)) };
    const out = await runPreflight(grouped, observer({ pace }));
    expect(out.gates.find((g) => g.gate === "pace")!.verdict).to.equal("pass");
    // e0, e1 and the first of the gpu0 pair start together; e3 waits for e2 and never runs beside it.
    expect(overlaps[2]).to.deep.equal(["e0", "e1", "e2"]);
    for (const seen of overlaps) expect(seen.includes("e2") && seen.includes("e3"), `e2 and e3 at once: ${seen.join(",")}`).to.equal(false);
    expect(overlaps.flat()).to.include("e3");
  });

  it("pace: two engines without profiles cannot be judged (skip); with profiles they compare with their own fit", async () => {
    expect((await verdicts(plan(2, { profiles: new Map() }), observer())).pace).to.equal("skip");
    // 2e-8·4096² + 6e-5·4096 + 0.005 = 0.586 s predicted; 0.6 s is within 1.5x, 1.0 s is not.
    expect((await verdicts(plan(2), observer())).pace).to.equal("pass");
    expect((await verdicts(plan(2), observer({ pace: async () => ({ seconds: 1.0, promptTokens: 4096 }) }))).pace).to.equal("fail");
    expect((await verdicts(plan(2), observer({ pace: async () => ({ seconds: 0.6 }) }))).pace).to.equal("fail");
  });

  it("profile: a missing row, a stale generation and decode errors past policy fail; a stale generation blocks transfers", async () => {
    expect((await verdicts(plan(2, { profiles: new Map([["e0", profile("e0")]]) }), observer())).profile).to.equal("fail");
    expect((await verdicts(plan(2, { profiles: new Map([["e0", profile("e0")], ["e1", profile("e1", { decode_fit_mape: 0.2 })]]) }), observer())).profile).to.equal("fail");
    const stale = await verdicts(plan(2), observer({ generation: async () => ({ digest: "sha256:restarted" }) }));
    expect(stale).to.include({ profile: "fail", produce: "skip", consume: "skip" });
  });

  it("contract: a declared contract fails on a version or attestation problem and blocks transfers", async () => {
    const declared = { fingerprint: "abc", engineVersion: "0.29.0" };
    expect((await verdicts(plan(2, { contract: declared }), observer())).contract).to.equal("pass");
    const bad = await verdicts(plan(2, { contract: declared }), observer({ contract: async (iid) => ({ version: "0.29.0", problems: iid === "e1" ? ["engine process_start_time_seconds is 1.0, the live engine reports 2.0"] : [] }) }));
    expect(bad).to.include({ contract: "fail", consume: "skip" });
  });

  it("tokenize: a failed count fails; disabled sizing skips", async () => {
    expect((await verdicts(plan(2), observer({ tokenize: async () => ({ error: "404" }) }))).tokenize).to.equal("fail");
    expect((await verdicts(plan(2, { tokenize: false }), observer())).tokenize).to.equal("skip");
  });

  it("produce: a producer without a handoff fails and leaves only the others to consume", async () => {
    const out = await runPreflight(plan(3), observer({ produce: async (iid) => (iid === "e0" ? { error: "no kv_transfer_params in the prefill response" } : { parameters: ["remote_engine_id"] }) }));
    expect(out.gates.find((g) => g.gate === "produce")!.verdict).to.equal("fail");
    expect(out.transfers.map((t) => `${t.producer}>${t.consumer}`).sort()).to.deep.equal(["e1>e2", "e2>e1"]);
  });

  it("consume: each failed repeat is kept; the first-token deadline reads as narwhal's", async () => {
    const out = await runPreflight(plan(2, { repeats: 3 }), observer({ transfer: async (p) => (p.producer === "e1" && p.repeat === 1 ? { ...p, status: "failed", firstTokenSeconds: null, tokens: 0, failureKind: "deadline_exceeded", error: "504" } : { ...p, status: "passed", firstTokenSeconds: 0.1, tokens: 4 }) }));
    expect(out.transfers).to.have.length(6);
    const consume = out.gates.find((g) => g.gate === "consume")!;
    expect(consume.verdict).to.equal("fail");
    expect(consume.lines.filter((l) => l.status === "fail").map((l) => l.message)).to.deep.equal(["e1 -> e0: first-token deadline 2.5s expired; transfer remains unconfirmed. Run first-token calibration."]);
  });

  it("slo: a TPOT below the measured per-token floor or a TTFT below one-token prefill fails; no profile skips", async () => {
    // Floor at 1 request and 300 KV tokens: 0.012 + 0.002 + 0.0009 = 14.9 ms.
    expect((await verdicts(plan(2, { slo: { ttftS: 10, tpotS: 0.0149 } }), observer())).slo).to.equal("pass");
    expect((await verdicts(plan(2, { slo: { ttftS: 10, tpotS: 0.0148 } }), observer())).slo).to.equal("fail");
    expect((await verdicts(plan(2, { slo: { ttftS: 0.005, tpotS: 0.125 } }), observer())).slo).to.equal("fail");
    expect((await verdicts(plan(3, { profiles: new Map() }), observer())).slo).to.equal("skip");
  });
});

describe("preflight: first-token calibration formula", () => {
  it("nearest-rank p99 picks the ceil(0.99·n)-th sample", () => {
    const xs = Array.from({ length: 100 }, (_, i) => (i + 1) / 100);
    expect(nearestRank(xs, 0.99)).to.equal(0.99);
    expect(nearestRank([...xs, 5], 0.99)).to.equal(1.0);
    expect(nearestRank([3, 1, 2], 0.5)).to.equal(2);
  });

  it("per group max(observed max, 1.2·p99) + 0.5 s; the deadline above the largest; the client TTFT check", () => {
    const flat = { producer: "e0", consumer: "e1", inputTokens: 512, firstTokenSeconds: Array.from({ length: 100 }, (_, i) => 0.1 + i / 1000), prefillSeconds: [0.2], failures: [] };
    // p99 = 0.198; 1.2·0.198 = 0.2376 > max 0.199.
    expect(groupCandidate(flat).candidate).to.be.closeTo(0.7376, 1e-9);
    const spiky = { ...flat, consumer: "e2", inputTokens: 4096, firstTokenSeconds: [...flat.firstTokenSeconds.slice(1), 1.4], prefillSeconds: [0.9], failures: ["observation window expired"] };
    // The one outlier is the max (1.4 s) and, with 100 samples, also above the p99 (0.199 s).
    expect(groupCandidate(spiky).candidate).to.be.closeTo(1.9, 1e-9);
    const r = calibrate([flat, spiky], { routerOverheadS: 0.05, clientTtftS: 3 });
    expect(r.floor).to.be.closeTo(1.9, 1e-9);
    expect(r.deadline).to.equal(2.0);
    expect(r.clientTtft).to.be.closeTo(2.95, 1e-9);
    expect(r.fitsClientTtft).to.equal(true);
    expect(calibrate([flat, spiky], { routerOverheadS: 0.2, clientTtftS: 3 }).fitsClientTtft).to.equal(false);
    expect(r.groups[1].failures).to.equal(1);
  });

  it("refuses a group with fewer than 100 completed samples and an observation bound outside (deadline, request timeout]", () => {
    expect(() => groupCandidate({ producer: "a", consumer: "b", inputTokens: 1, firstTokenSeconds: [0.1], prefillSeconds: [], failures: [] })).to.throw(/1 completed samples, at least 100/);
    expect(observationBoundProblem(2.5, 2.5, 600)).to.match(/must exceed/);
    expect(observationBoundProblem(700, 2.5, 600)).to.match(/within serving.request_timeout_s/);
    expect(observationBoundProblem(10, 2.5, 600)).to.equal(undefined);
  });
});

describe("preflight: narwhal-check's report per gate", () => {
  it("assigns lines to the gate headers, the profile-generation lines to profile, a KV skip to both KV gates", () => {
    const text = [
      "fleet: 2 engines, model tiny",
      "slo:   ttft <= 10.0s, tpot <= 0.125s",
      "reach", "  ok    e0 /health", "  FAIL  e1 /health did not answer 200",
      "calibration", "  WARN  first-token deadline has no calibration evidence",
      "contract", "  SKIP  no engine_contract declared; checking live vLLM versions only", "  ok    e0 vLLM 0.29.0", "  SKIP  e1 contract: unreachable",
      "profile", "  ok    e0 ttft=...", "  ok    e0 profile generation sha256:x",
      "model", "  ok    e0 serves tiny",
      "pace", "  SKIP  pace needs 3 engines or individual profiles",
      "tokenize", "  ok    e0 /tokenize -> 64 tokens",
      "  SKIP  produce and consume: pre-transfer gate failed on e1",
      "slo", "  ok    e0 holds 100 batch tokens",
      "", "1 gate(s) failed, 3 skipped",
    ].join("\n");
    expect(parseNarwhalReport(text).verdicts).to.deep.equal({ reach: "fail", calibration: "pass", contract: "pass", profile: "pass", model: "pass", pace: "skip", tokenize: "pass", produce: "skip", consume: "skip", slo: "pass" });
  });
});
