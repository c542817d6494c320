/**
 * The adoption forecast: which engines a preview speaks of (those the stack does not record yet), and
 * from what it reads (the runbook launch directory, the runbook sidecar's answer) and the local store
 * and calibration files, which evidence the up would adopt and which it will measure, each with its
 * reason.
 */
import { expect } from "chai";
import { createHash } from "node:crypto";
import { forecastCalibration, forecastProfile, forecastRunbookEngine, forecastScope, formatForecast, mayForecast, parseSidecarAnswer, runbookAttestationUrl, type RunbookSighting, type SidecarAnswer } from "../../../lib/adoption/forecast";
import { renderLaunchPlan } from "../../../lib/launch/plan";
import type { AdoptSource } from "../../../lib/profiling/adopt";
import type { EngineSpec } from "../../../lib/config/types";
import { launchInputs } from "../launch/inputs";
import { nativeSurvey, runbookEnv, runbookPlan } from "../launch/runbook-record";
import { decideRunbookAdoption, surveyEnvKeys, type RunbookDecision } from "../../../lib/launch/runbook";
import { narwhalRow } from "../profiling/store-fixture";

const ATTESTED = `sha256:${"a".repeat(64)}`;
const LAUNCHED = `sha256:${"b".repeat(64)}`;
const START = 1795956299.8863;

const plan = renderLaunchPlan(launchInputs());
const env = (() => {
  const all = runbookEnv(plan, "sk-secret");
  return Object.fromEntries(surveyEnvKeys(plan).filter((k) => k in all).map((k) => [k, all[k]]));
})();
const survey = nativeSurvey(runbookPlan(plan, { backend: "native" }), env);
const kept = decideRunbookAdoption({ plan }, survey);
const answer = (over: Partial<SidecarAnswer> = {}): SidecarAnswer => ({ attestationDigest: ATTESTED, launchDigest: LAUNCHED, version: "0.29.0", processStartS: START, ...over });
const seen = (engineId: string, over: Partial<SidecarAnswer> = {}, decision: RunbookDecision | { problem: string } = kept): RunbookSighting => ({ engineId, run: survey.run, survey, decision, sidecar: answer(over) });

/** A store whose e1 row binds the runbook's launch digest, with its sidecar entry. */
function store(row: (iid: string) => Record<string, unknown> = (iid) => narwhalRow(iid, LAUNCHED)) {
  const evidence = { attestation_digest: ATTESTED, launch_digest: LAUNCHED };
  const storeBytes = Buffer.from(JSON.stringify({ schema: "narwhal.profiles", schema_version: 1, meta: {}, profiles: [row("e1"), row("e2")] }));
  const sweep = { prefill_lens: [256, 2048], decode_input_lens: [256], decode_concurrency: [1, 8], decode_tokens: 16, prefill_repeats: 3, decode_repeats: 1 };
  const entry = (iid: string) => ({ max_model_len: 4096, sweep, generation_evidence: evidence, prefill_fit_points: [[256, 0.0183]], prefill_fit_mape: 0.04, profile: row(iid) });
  const samplesBytes = Buffer.from(JSON.stringify({ method_version: 2, engines: { e1: entry("e1"), e2: entry("e2") } }));
  const digest = (b: Buffer) => "sha256:" + createHash("sha256").update(b).digest("hex");
  const source: AdoptSource = { storePath: "/srv/runbook/runs/profiles.json", storeSha256: digest(storeBytes), samplesPath: "/srv/runbook/runs/profiles.samples.json", samplesSha256: digest(samplesBytes) };
  return { source, storeBytes, samplesBytes };
}

describe("adoption forecast (preview of an up that brings engines under the program)", () => {
  const engine = (id: string, runbookRun?: string) => ({ id, ...(runbookRun ? { runbookRun } : {}) }) as EngineSpec;
  const scopeSpec = (over: { store?: boolean; calibration?: boolean } = {}) => ({
    engines: [engine("e1", "/srv/runbook/runs/e1"), engine("e2")],
    profiling: { ...(over.store ? { adoptStore: "/srv/runbook/profiles.json" } : {}) },
    calibration: { enabled: true, ...(over.calibration ? { adopt: { path: "/srv/runbook/calibration.json" } } : {}) },
  }) as unknown as Parameters<typeof forecastScope>[0];

  it("speaks only of engines the stack does not record yet, so a stack once brought up is not read again", () => {
    const none = new Set<string>();
    expect(mayForecast(scopeSpec()), "a runbookRun alone is enough").to.equal(true);
    expect(forecastScope(scopeSpec(), none)).to.deep.equal({ runbookEngines: [engine("e1", "/srv/runbook/runs/e1")], profileEngines: [], calibration: false });
    expect(forecastScope(scopeSpec({ store: true, calibration: true }), none)).to.deep.include({ profileEngines: ["e1", "e2"], calibration: true });
    // After an up recorded both engines, nothing is left to forecast, whatever the config still names.
    expect(forecastScope(scopeSpec({ store: true, calibration: true }), new Set(["e1", "e2"]))).to.equal(undefined);
    // An engine added later: its own lines only, and no calibration, which the first up already made.
    expect(forecastScope(scopeSpec({ store: true, calibration: true }), new Set(["e1"]))).to.deep.equal({ runbookEngines: [], profileEngines: ["e2"], calibration: false });
    const plain = { ...scopeSpec(), engines: [engine("e1"), engine("e2")] };
    expect(mayForecast(plain), "no runbook evidence named: the preview reads nothing").to.equal(false);
    expect(forecastScope(plain, none)).to.equal(undefined);
  });

  it("reads the runbook sidecar's URL from launch.json and the digests from its answer", () => {
    expect(runbookAttestationUrl(survey)).to.equal(`${plan.url.replace(/:\d+$/, "")}:8200/v1/attestation`);
    expect(runbookAttestationUrl({ ...survey, launchJson: undefined })).to.equal(undefined);
    const launchJson = (endpoint: string, port: unknown = 8200) => ({ ...survey, launchJson: Buffer.from(JSON.stringify({ endpoint, attestation_port: port })).toString("base64") });
    expect(runbookAttestationUrl(launchJson("http://10.0.0.7:8100/"))).to.equal("http://10.0.0.7:8200/v1/attestation");
    expect(runbookAttestationUrl(launchJson("http://gpu-a.corp:8100/v1"))).to.equal("http://gpu-a.corp:8200/v1/attestation");
    expect(runbookAttestationUrl(launchJson("http://[fd00::7]:8100"))).to.equal("http://[fd00::7]:8200/v1/attestation");
    expect(runbookAttestationUrl(launchJson("http://10.0.0.7:8100", 70000)), "not a TCP port").to.equal(undefined);
    expect(runbookAttestationUrl(launchJson("10.0.0.7:8100")), "not an engine URL").to.equal(undefined);
    expect(parseSidecarAnswer(JSON.stringify({ attestation_digest: ATTESTED, engine: { version: "0.29.0", process_start_time_seconds: START } }))).to.deep.equal(answer({ launchDigest: null }));
    expect(parseSidecarAnswer("{}")).to.deep.equal({ problem: "its answer carries no attestation_digest" });
  });

  it("says what the up decides for a runbook engine, and what the launch directory alone says when the plan could not be derived", () => {
    expect(forecastRunbookEngine(seen("e1"))).to.deep.equal({ subject: "engine e1", verdict: "adopt", reason: kept.reason });
    const other = decideRunbookAdoption({ plan }, nativeSurvey(runbookPlan(plan, { backend: "native", flags: { "--max-num-seqs": "16" } }), env));
    expect(forecastRunbookEngine(seen("e1", {}, other))).to.deep.equal({ subject: "engine e1", verdict: "replace", reason: other.reason });
    expect(other.reason).to.include("argv --max-num-seqs is 16 there, 8 here");
    const unplanned = forecastRunbookEngine(seen("e1", {}, { problem: "the discovery probe: no GPU" }));
    expect(unplanned.verdict).to.equal("undecided");
    expect(unplanned.reason).to.include("the up keeps it if that plan equals the program's, which the preview could not derive (the discovery probe: no GPU)");
    const gone = forecastRunbookEngine({ ...seen("e1", {}, { problem: "x" }), survey: { ...survey, live: undefined } });
    expect(gone).to.deep.equal({ subject: "engine e1", verdict: "start", reason: `runbook launch ${survey.run}: its recorded process 4242 no longer runs; the up starts the program's engine` });
    expect(forecastRunbookEngine({ engineId: "e1", run: survey.run, unseen: "hosts[a].hostKey is not pinned" })).to.include({ verdict: "undecided", reason: "decided in the up: hosts[a].hostKey is not pinned" });
  });

  it("measures instead of adopting a row the preflight's profile gate would reject, as the up decides", () => {
    const f = store((iid) => ({ ...narwhalRow(iid, LAUNCHED), decode_fit_mape: 0.0566 }));
    expect(forecastProfile("e1", seen("e1"), f.source, f.storeBytes, f.samplesBytes)).to.deep.equal({
      subject: "profile e1",
      verdict: "measure",
      reason: "the row of /srv/runbook/runs/profiles.json fails the preflight's profile limits: e1 decode_fit_mape 0.0566 exceeds the profile-validation limit 0.05",
    });
  });

  it("adopts a row that binds what the runbook's sidecar attests, and measures a restarted engine and one the program starts", () => {
    const f = store();
    const adopted = forecastProfile("e1", seen("e1"), f.source, f.storeBytes, f.samplesBytes);
    expect(adopted.verdict, adopted.reason).to.equal("adopt");
    expect(adopted.reason).to.include(`binds ${LAUNCHED}, as the runbook's sidecar attests now`);
    const restarted = forecastProfile("e2", seen("e2", { launchDigest: `sha256:${"c".repeat(64)}` }), f.source, f.storeBytes, f.samplesBytes);
    expect(restarted).to.deep.equal({ subject: "profile e2", verdict: "measure", reason: `its row binds generation ${LAUNCHED}, the live engine binds sha256:${"c".repeat(64)} (restarted or relaunched since it was measured)` });
    const started = forecastProfile("e2", undefined, f.source, f.storeBytes, f.samplesBytes);
    expect(started.verdict).to.equal("measure");
    expect(started.reason).to.include("the program starts engine e2 itself (no engines[].runbookRun)");
    expect(forecastProfile("e1", { ...seen("e1"), sidecar: { problem: "curl exited 7" } }, f.source, f.storeBytes, f.samplesBytes).verdict).to.equal("undecided");
    // The up replaces the engine: whatever its row binds, the new process is measured.
    const replaced = decideRunbookAdoption({ plan }, nativeSurvey(runbookPlan(plan, { backend: "native", flags: { "--max-num-seqs": "16" } }), env));
    const remeasured = forecastProfile("e1", seen("e1", {}, replaced), f.source, f.storeBytes, f.samplesBytes);
    expect(remeasured).to.deep.equal({ subject: "profile e1", verdict: "measure", reason: `${replaced.reason}, so engine e1 will be a new generation` });
    const unplanned = forecastProfile("e1", seen("e1", {}, { problem: "x" }), f.source, f.storeBytes, f.samplesBytes);
    expect(unplanned.verdict).to.equal("undecided");
    expect(unplanned.reason).to.include("adopted if the up keeps engine e1 and serves the runbook's attestation document");
  });

  it("adopts a calibration only while every sampled process still runs, naming each one that does not", () => {
    const file = (starts: Record<string, number>) => Buffer.from(JSON.stringify({ contract_fingerprint: "x", process_starts: starts, generations: { e1: LAUNCHED, e2: LAUNCHED } }));
    const sightings = new Map([["e1", seen("e1")], ["e2", seen("e2")]]);
    expect(forecastCalibration("/c.json", file({ e1: START, e2: START }), ["e1", "e2"], sightings).verdict).to.equal("adopt");
    const restarted = forecastCalibration("/c.json", file({ e1: START, e2: START - 60 }), ["e1", "e2"], sightings);
    expect(restarted).to.deep.equal({ subject: "first-token calibration", verdict: "measure", reason: `e2 was sampled in the process started at ${START - 60}, the live process started at ${START} (restarted since)` });
    // Without an engine contract the file binds identities: {version, process start}.
    const identity = forecastCalibration("/c.json", Buffer.from(JSON.stringify({ contract_fingerprint: null, process_starts: { e1: START }, generations: { e1: LAUNCHED } })), ["e1"], sightings);
    expect(identity.verdict).to.equal("measure");
    expect(identity.reason).to.match(/e1 was sampled as generation "sha256:b+", the live engine binds sha256:[0-9a-f]{64}/);
  });

  it("prints one line per subject", () => {
    expect(formatForecast([{ subject: "profile e1", verdict: "measure", reason: "why" }])).to.deep.equal(["adoption forecast: profile e1: measure: why"]);
  });
});
