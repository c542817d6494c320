/**
 * What replaces the Preflight and what only updates it, input checks that name the field before any
 * probe, the failure that names gate and engines, and the budgets taken from the fleet document.
 */
import { expect } from "chai";
import { inputFailures, provider } from "../../../dynamic-providers/preflight/provider";
import { failureSummary } from "../../../lib/preflight/outcome";
import { planOf, timeoutsOf } from "../../../lib/preflight/document-plan";
import type { PreflightInputs, PreflightOutputs } from "../../../dynamic-providers/preflight/schema";
import { UNKNOWN } from "../../../lib/unknown";
import type { GateResult } from "../../../lib/preflight/types";

const D = (c: string) => "sha256:" + c.repeat(64);
const doc = () => ({
  schema: "narwhal.fleet",
  schema_version: 2,
  model: "tiny",
  engines: [
    { iid: "e1", url: "http://198.18.0.11:8101", attestation_url: "http://198.18.0.11:8010/v1/attestation", role: "prefill" },
    { iid: "e2", url: "http://198.18.0.12:8101", attestation_url: "http://198.18.0.12:8010/v1/attestation", role: "decode", pin: true },
  ],
  slo: { ttft_s: 10, tpot_s: 0.125 },
  serving: { request_timeout_s: 600, prefill_timeout_s: 120 },
  engine: { first_token_timeout_s: 2.5, health_timeout_s: 5, engine_api_key_env: "NARWHAL_ENGINE_API_KEY" },
  profiles: { path: "runs/profiles.json" },
});
const inputs = (): PreflightInputs => ({
  stack: "s",
  fleetDocument: doc(),
  engines: ["e1", "e2"].map((id, i) => ({ engineId: id, generationDigest: D(String(i)), attestationDigest: D("a"), profileDigest: D("b") })),
  profiles: [],
  profileStoreDigest: D("c"),
  pairs: "mesh",
  repeats: 1,
  schedule: "concurrent",
  apiKey: "k-1",
});

describe("preflight provider: replacement and input rules", () => {
  const diff = (change: (i: PreflightInputs) => void) => {
    const olds = inputs() as PreflightOutputs;
    const news = inputs();
    change(news);
    return provider.diff!("id", olds, news) as Promise<{ changes: boolean; replaces: string[] }>;
  };

  it("an SLO or deadline edit replaces it; so does an engine restart, a new profile, pair selection and repeats", async () => {
    expect((await diff((i) => ((i.fleetDocument.slo as { tpot_s: number }).tpot_s = 0.1))).replaces).to.deep.equal(["fleetDocument"]);
    expect((await diff((i) => ((i.fleetDocument.engine as { first_token_timeout_s: number }).first_token_timeout_s = 4))).replaces).to.deep.equal(["fleetDocument"]);
    expect((await diff((i) => (i.engines[1].generationDigest = D("9")))).replaces).to.deep.equal(["engines"]);
    expect((await diff((i) => (i.profileStoreDigest = D("d")))).replaces).to.deep.equal(["profileStoreDigest"]);
    expect((await diff((i) => (i.pairs = "ring"))).replaces).to.deep.equal(["pairs"]);
    expect((await diff((i) => (i.repeats = 3))).replaces).to.deep.equal(["repeats"]);
  });

  it("the schedule and the credential only update (they never change a verdict)", async () => {
    for (const change of [(i: PreflightInputs) => (i.schedule = "sequential"), (i: PreflightInputs) => (i.apiKey = "k-2")]) {
      const d = await diff(change);
      expect(d).to.deep.include({ changes: true, replaces: [] });
    }
    expect(await diff(() => undefined)).to.deep.include({ changes: false });
  });

  it("names a bad field before anything is probed", () => {
    const bad = { ...inputs(), repeats: 0, pairs: "star", fleetDocument: { ...doc(), engines: [{ iid: "e1", url: "198.18.0.11:8101" }] } } as unknown as Record<string, unknown>;
    const props = inputFailures(bad).map((f) => `${f.property}: ${f.reason}`);
    expect(props.some((p) => p.startsWith("fleetDocument: fleetDocument.engines[0].url (e1)"))).to.equal(true);
    expect(props.some((p) => p.startsWith("repeats:"))).to.equal(true);
    expect(props.some((p) => p.startsWith("pairs:"))).to.equal(true);
    const missing = { ...inputs(), engines: inputs().engines.slice(0, 1) } as unknown as Record<string, unknown>;
    expect(inputFailures(missing).map((f) => f.reason)).to.deep.equal(["engines: no generation, attestation and profile given for e2"]);
  });

  it("leaves what a preview cannot know yet to the up, through the provider's check", async () => {
    const engines = [{ ...inputs().engines[0], profileDigest: UNKNOWN }, { ...inputs().engines[1], generationDigest: "abc" }];
    const news = { ...inputs(), engines, fleetDocument: UNKNOWN, repeats: UNKNOWN };
    expect(await provider.check!({}, news)).to.deep.equal({ inputs: news });
    const known = await provider.check!({}, { ...inputs(), engines: UNKNOWN, repeats: 0 });
    expect(known.failures).to.deep.equal([{ property: "repeats", reason: "repeats must be an integer from 1 to 100, got 0" }]);
  });

  it("a failure names each failed gate and its engines or pairs", () => {
    const gates: GateResult[] = [
      { gate: "reach", verdict: "fail", lines: [{ status: "fail", message: "e2 /health did not answer 200" }] },
      { gate: "consume", verdict: "fail", lines: [{ status: "ok", message: "e1 -> e3 moved KV" }, { status: "fail", message: "e1 -> e2: first-token deadline 2.5s expired" }] },
      { gate: "slo", verdict: "pass", lines: [] },
    ];
    expect(failureSummary(gates)).to.equal("reach (e2); consume (e1 -> e2)");
  });

  it("takes the router's budgets and pins from the document", () => {
    expect(timeoutsOf(doc())).to.deep.equal({ healthS: 5, prefillS: 120, tokenizeS: 2, firstTokenS: 2.5, decodeReadS: 60, requestS: 600 });
    const p = planOf(doc(), [], { pairs: "ring", repeats: 2, schedule: "sequential" });
    expect(p.engines).to.deep.equal([{ iid: "e1", role: "prefill", pin: false }, { iid: "e2", role: "decode", pin: true }]);
    expect(p).to.deep.include({ model: "tiny", tokenize: true, pairs: "ring", repeats: 2, contract: null });
    expect(p.slo).to.deep.equal({ ttftS: 10, tpotS: 0.125 });
  });
});
