/**
 * What replaces the Calibration and what only updates it (model, runtime, transport, served context
 * and engine generations need new samples; an SLO or deadline edit, and the observation bound whose
 * default follows the deadline, do not; nor does naming a calibration file to adopt), the fit re-judged on
 * update without sampling, and input checks that name the field before any probe.
 */
import { expect } from "chai";
import { inputFailures, provider, rejudged } from "../../../dynamic-providers/calibration/provider";
import type { CalibrationInputs, CalibrationOutputs } from "../../../dynamic-providers/calibration/schema";
import { UNKNOWN } from "../../../lib/unknown";

const D = (c: string) => "sha256:" + c.repeat(64);
const doc = () => ({
  schema: "narwhal.fleet",
  schema_version: 2,
  model: "tiny",
  engines: [
    { iid: "e1", url: "http://198.18.0.11:8101", role: "prefill" },
    { iid: "e2", url: "http://198.18.0.12:8101", role: "decode" },
  ],
  slo: { ttft_s: 10, tpot_s: 0.125 },
  serving: { request_timeout_s: 600, prefill_timeout_s: 120 },
  engine: { first_token_timeout_s: 2.5, health_timeout_s: 5 },
});
const inputs = (): CalibrationInputs => ({
  stack: "s",
  fleetDocument: doc(),
  model: "tiny",
  runtime: { kind: "native" },
  engines: ["e1", "e2"].map((id, i) => ({ engineId: id, role: i ? "decode" : "prefill", pin: false, generationDigest: D(String(i)), attestationDigest: D("a"), transport: "tcp", maxModelLen: 16384 })),
  inputLengths: [128, 4096, 8192, 16383],
  samplesPerGroup: 100,
  observationBoundS: 10,
  maxFailuresPerGroup: 20,
  routerOverheadS: 0.05,
  schedule: "concurrent",
  apiKey: "k-1",
});

describe("calibration provider: replacement and input rules", () => {
  const diff = (change: (i: CalibrationInputs) => void) => {
    const news = inputs();
    change(news);
    return provider.diff!("id", inputs(), news) as Promise<{ changes: boolean; replaces: string[] }>;
  };

  it("replaces on a new model, runtime, transport, served context, engine generation or role; nothing else", async () => {
    expect((await diff((i) => (i.model = "other"))).replaces).to.deep.equal(["model"]);
    expect((await diff((i) => (i.runtime = { kind: "docker", image: D("f") }))).replaces).to.deep.equal(["runtime"]);
    expect((await diff((i) => (i.engines[0].transport = "ucx_rdma"))).replaces).to.deep.equal(["engines"]);
    expect((await diff((i) => (i.engines[1].maxModelLen = 32768))).replaces).to.deep.equal(["engines"]);
    expect((await diff((i) => (i.engines[1].generationDigest = D("9")))).replaces).to.deep.equal(["engines"]);
    expect((await diff((i) => (i.engines[1].attestationDigest = D("8")))).replaces).to.deep.equal(["engines"]);
    expect((await diff((i) => (i.engines[1].pin = true))).replaces).to.deep.equal(["engines"]);
    expect((await diff((i) => (i.inputLengths = [128, 16383]))).replaces).to.deep.equal(["inputLengths"]);
    expect(await diff(() => undefined)).to.include({ changes: false });
  });

  it("an SLO or deadline edit (and the default bound that follows it), the router overhead, schedule or key only update", async () => {
    for (const edit of [
      (i: CalibrationInputs) => (i.observationBoundS = 12.4),
      (i: CalibrationInputs) => ((i.fleetDocument.slo as Record<string, number>).ttft_s = 4),
      (i: CalibrationInputs) => ((i.fleetDocument.engine as Record<string, number>).first_token_timeout_s = 3.1),
      (i: CalibrationInputs) => (i.routerOverheadS = 0.2),
      (i: CalibrationInputs) => (i.schedule = "sequential"),
      (i: CalibrationInputs) => (i.apiKey = "k-2"),
      // A calibration file named later never replaces samples already taken.
      (i: CalibrationInputs) => (i.adopt = { path: "/srv/runbook/runs/first-token.json", sha256: D("c") }),
    ]) {
      const d = await diff(edit);
      expect(d.changes).to.equal(true);
      expect(d.replaces).to.deep.equal([]);
    }
  });

  it("re-judges the client TTFT fit from the kept figures when the SLO changes", () => {
    const olds = { ...inputs(), deadlineS: 3.1, prefillS: 1.2, clientTtftS: 4.35, clientTtftRequirementS: 10, fitsClientTtft: true, currentDeadlineS: 2.5 } as CalibrationOutputs;
    const news = inputs();
    (news.fleetDocument.slo as Record<string, number>).ttft_s = 4;
    (news.fleetDocument.engine as Record<string, number>).first_token_timeout_s = 3.1;
    const r = rejudged(olds, news);
    expect(r).to.include({ deadlineS: 3.1, clientTtftRequirementS: 4, fitsClientTtft: false, currentDeadlineS: 3.1 });
    expect(r.clientTtftS).to.be.closeTo(4.35, 1e-9);
  });

  it("names the field of every bad input before any probe", () => {
    const bad = inputs();
    bad.samplesPerGroup = 99;
    bad.observationBoundS = 2.5;
    bad.inputLengths = [128, 16384];
    bad.engines[0].generationDigest = "abc";
    bad.engines.pop();
    bad.model = "other";
    bad.schedule = "parallel" as never;
    const failures = inputFailures(bad);
    expect(failures).to.deep.equal([
      { property: "engines", reason: 'engines[e1].generationDigest must be sha256:<64 hex>, got "abc"' },
      { property: "engines", reason: "engines: no generation, role and context given for e2" },
      { property: "model", reason: 'model "other" is not the fleet document\'s "tiny"' },
      { property: "observationBoundS", reason: "observation bound 2.5s must exceed engine.first_token_timeout_s 2.5s" },
      { property: "inputLengths", reason: "inputLengths [16384] leave no output token within the served context 16384; the longest admitted input is 16383" },
      { property: "samplesPerGroup", reason: "samplesPerGroup must be an integer of at least 100, got 99" },
      { property: "schedule", reason: 'schedule must be "concurrent" or "sequential", got "parallel"' },
    ]);
    const far = inputs();
    far.observationBoundS = 601;
    expect(inputFailures(far)).to.deep.equal([{ property: "observationBoundS", reason: "observation bound 601s must be within serving.request_timeout_s 600s" }]);
    expect(inputFailures(inputs())).to.deep.equal([]);
  });

  it("leaves what a preview cannot know yet to the up, through the provider's check", async () => {
    const news = { ...inputs(), engines: [{ ...inputs().engines[0], generationDigest: UNKNOWN }, inputs().engines[1]], fleetDocument: UNKNOWN, samplesPerGroup: UNKNOWN, adopt: { path: "/srv/first-token.json", sha256: UNKNOWN } };
    expect(await provider.check!({}, news)).to.deep.equal({ inputs: news });
    // An engine that is not known only spares the rules that read it: the document still names the model.
    const model = await provider.check!({}, { ...inputs(), engines: UNKNOWN, model: "other" });
    expect(model.failures).to.deep.equal([{ property: "model", reason: 'model "other" is not the fleet document\'s "tiny"' }]);
  });

  it("names a calibration file to adopt that is not an absolute path with the digests of its bytes", () => {
    const reason = "adopt must name the calibration to adopt as {path, sha256, pinned?}: an absolute path and sha256:<64 hex> digests of the bytes read and pinned";
    for (const adopt of [{ path: "runs/first-token.json", sha256: D("c") }, { path: "/srv/first-token.json", sha256: "c".repeat(64) }, { path: "/srv/first-token.json", sha256: D("c"), pinned: "abc" }]) {
      expect(inputFailures({ ...inputs(), adopt })).to.deep.equal([{ property: "adopt", reason }]);
    }
    expect(inputFailures({ ...inputs(), adopt: { path: "/srv/first-token.json", sha256: D("c"), pinned: D("c") } })).to.deep.equal([]);
  });
});
