import { expect } from "chai";
import { createHash } from "node:crypto";
import { renderLaunchPlan } from "../../../lib/launch/plan";
import { decideRunbookAdoption, planDifferences, runbookAttestationOf, surveyEnvKeys, type RunbookSurvey } from "../../../lib/launch/runbook";
import { launchInputs } from "./inputs";
import { BOOT, nativeSurvey, runbookEnv, runbookPlan } from "./runbook-record";

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

describe("runbook launch adoption (plan equality)", () => {
  const plan = renderLaunchPlan(launchInputs());
  const env = (over: Record<string, string> = {}) => {
    const all = runbookEnv(plan, "sk-secret", over);
    return Object.fromEntries(surveyEnvKeys(plan).filter((k) => k in all).map((k) => [k, all[k]]));
  };

  it("adopts a live native engine whose launch.json serves the same plan, despite the launcher's own record fields and JSON spacing", () => {
    const d = decideRunbookAdoption({ plan }, nativeSurvey(runbookPlan(plan, { backend: "native" }), env()));
    expect(d.action, d.reason).to.equal("adopt");
    if (d.action !== "adopt") return;
    expect(d.identity).to.deep.equal({ pid: 4242, startTicks: 777, bootId: BOOT });
    expect(d.runbookPlanSha256).to.match(/^[0-9a-f]{64}$/);
  });

  it("replaces an engine whose serving flag differs, naming the flag and both values", () => {
    const d = decideRunbookAdoption({ plan }, nativeSurvey(runbookPlan(plan, { backend: "native", flags: { "--max-num-seqs": "16" } }), env()));
    expect(d.action).to.equal("replace");
    if (d.action !== "replace") return;
    expect(d.differences).to.deep.equal([{ field: "argv --max-num-seqs", runbook: "16", program: "8" }]);
    expect(d.reason).to.include("argv --max-num-seqs is 16 there, 8 here");
  });

  it("names an environment difference (GPU visibility) and a changed kv-transfer-config value", () => {
    const kv = JSON.parse(plan.argv[plan.argv.indexOf("--kv-transfer-config") + 1]);
    kv.kv_connector_extra_config.kv_lease_duration = 60;
    const launch = runbookPlan(plan, { backend: "native", flags: { "--kv-transfer-config": JSON.stringify(kv) } });
    const d = decideRunbookAdoption({ plan }, nativeSurvey(launch, env({ CUDA_VISIBLE_DEVICES: "2,3" })));
    expect(d.action).to.equal("replace");
    if (d.action !== "replace") return;
    expect(d.differences.map((x) => x.field)).to.deep.equal(["argv --kv-transfer-config", "env CUDA_VISIBLE_DEVICES"]);
    expect(d.reason).to.include("env CUDA_VISIBLE_DEVICES is 2,3 there, 0,1 here");
  });

  it("compares model, endpoint and a missing flag", () => {
    const launch: Record<string, unknown> = { ...runbookPlan(plan, { backend: "native" }), model_path: "/models/other", endpoint: "http://198.18.0.11:8101" };
    const args = launch.args as string[];
    args.splice(args.indexOf("--enforce-eager"), 1);
    const diffs = planDifferences({ plan }, launch, env());
    expect(diffs).to.deep.include.members([
      { field: "model", runbook: "/models/other", program: "/models/tiny" },
      { field: "endpoint", runbook: "http://198.18.0.11:8101", program: "http://198.18.0.11:8100" },
      { field: "argv --enforce-eager", runbook: "(unset)", program: "true" },
    ]);
  });

  it("a container launch compares the image, accepting the image ID the launcher's check resolved", () => {
    const image = "sha256:" + "c".repeat(64);
    const launch = runbookPlan(plan, { image: "registry.example/vllm@sha256:" + "e".repeat(64) });
    expect(planDifferences({ plan, image }, launch, env(), image)).to.deep.equal([]);
    expect(planDifferences({ plan, image }, launch, env(), "sha256:" + "f".repeat(64)).map((x) => x.field)).to.deep.equal(["image"]);
  });

  it("starts afresh when the recorded process is gone or the pid now belongs to another process", () => {
    const launch = runbookPlan(plan, { backend: "native" });
    const gone = decideRunbookAdoption({ plan }, nativeSurvey(launch, env(), { live: undefined }));
    expect(gone).to.include({ action: "start" });
    expect(gone.reason).to.include("no longer runs");
    const reused = decideRunbookAdoption({ plan }, nativeSurvey(launch, env(), { live: { pid: 4242, pgid: 4242, startTicks: 9999, bootId: BOOT } }));
    expect(reused).to.include({ action: "start" });
    expect(reused.reason).to.include("another process now");
    expect(decideRunbookAdoption({ plan }, { run: "/r", env: {} })).to.include({ action: "start" });
  });

  it("hands an adopted engine's sidecar document on with the /proc start of the runbook's process, and nothing otherwise", () => {
    const launch = runbookPlan(plan, { backend: "native" });
    const live = { pid: 4242, pgid: 4242, startTicks: 777, bootId: BOOT, btime: 1_790_000_000, clockTicks: 100 };
    const surveyed = nativeSurvey(launch, env(), { live, attestationJson: b64('{"schema":"narwhal.attestation"}\n') });
    const adopted = decideRunbookAdoption({ plan }, surveyed);
    expect(runbookAttestationOf(adopted, surveyed)).to.deep.equal({ run: surveyed.run, text: '{"schema":"narwhal.attestation"}\n', processStartS: 1_790_000_007.77 });
    expect(runbookAttestationOf(adopted, { ...surveyed, attestationJson: undefined }), "no document in the launch directory").to.equal(undefined);
    const other = nativeSurvey(runbookPlan(plan, { backend: "native", flags: { "--max-num-seqs": "99" } }), env(), { live, attestationJson: surveyed.attestationJson });
    const replaced = decideRunbookAdoption({ plan }, other);
    expect(replaced.action).to.equal("replace");
    expect(runbookAttestationOf(replaced, other), "a replaced engine's document names a process that is going away").to.equal(undefined);
  });

  it("refuses to adopt a launch whose checked.json binds another launch.json", () => {
    const s = nativeSurvey(runbookPlan(plan, { backend: "native" }), env(), { checkedJson: b64(JSON.stringify({ plan_sha256: "0".repeat(64) })) });
    const d = decideRunbookAdoption({ plan }, s);
    expect(d.action).to.equal("replace");
    expect(d.reason).to.include("checked.json binds plan " + "0".repeat(64));
  });

  it("refuses a container that lacks the launch directory's ownership label", () => {
    const launch = runbookPlan(plan);
    const text = JSON.stringify(launch);
    const sha = createHash("sha256").update(text).digest("hex");
    const base: RunbookSurvey = {
      run: "/r",
      launchJson: b64(text),
      checkedJson: b64(JSON.stringify({ plan_sha256: sha, image_id: launch.image })),
      containerId: "a".repeat(64),
      ownerJson: b64(JSON.stringify({ label: "b".repeat(32) })),
      container: { running: true, image: String(launch.image), ownerLabel: "b".repeat(32), startedAt: "2026-01-01T00:00:00Z" },
      env: env(),
    };
    expect(decideRunbookAdoption({ plan, image: String(launch.image) }, base)).to.include({ action: "adopt" });
    const foreign = decideRunbookAdoption({ plan, image: String(launch.image) }, { ...base, container: { ...base.container!, ownerLabel: "x" } });
    expect(foreign.action).to.equal("replace");
    expect(foreign.reason).to.include("ownership label io.narwhal.launch=" + "b".repeat(32));
    // An adopted container's sidecar document is bound to the container's start: its entrypoint is the engine.
    const doc = { ...base, container: { ...base.container!, startedAt: "2026-01-01T00:00:07.250000000Z" }, attestationJson: b64("{}\n") };
    expect(runbookAttestationOf(decideRunbookAdoption({ plan, image: String(launch.image) }, doc), doc)).to.deep.equal({ run: "/r", text: "{}\n", processStartS: Date.UTC(2026, 0, 1, 0, 0, 7, 250) / 1000 });
  });

  it("never asks the survey for a secret's environment key", () => {
    const withSecret = { ...plan, env: { ...plan.env, HF_TOKEN: "x", VLLM_API_KEY: "y" } };
    expect(surveyEnvKeys(withSecret)).to.not.include.members(["HF_TOKEN", "VLLM_API_KEY"]);
    expect(surveyEnvKeys(withSecret)).to.include("UCX_TLS");
  });
});
