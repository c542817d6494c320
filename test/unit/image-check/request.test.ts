import { expect } from "chai";
import { spawnSync } from "node:child_process";
import {
  checkContainerName,
  checkLogLine,
  dockerCheckStep,
  imageCheckProblems,
  launchJsonText,
  nativeCheckStep,
  parseCheckLog,
  RUNTIME_CHECK_PY,
  RUNTIME_CHECK_SHA256,
  runtimeCheckRequest,
  type CheckLogEntry,
  type DockerCheckSpec,
  type ImageCheckSpec,
} from "../../../lib/image-check";
import { LaunchInputs, renderLaunchPlan } from "../../../lib/launch/plan";
import { startScript } from "../../../lib/runtime/native";
import { shq } from "../../../lib/shell";
import { launchInputs } from "../launch/inputs";

const IMAGE = `sha256:${"a".repeat(64)}`;
const base = launchInputs({ blockSize: 16, maxModelLen: 4096 });
const launch: LaunchInputs = { ...base, engine: { ...base.engine, gpuIds: [0] }, host: { ...base.host, alias: "h1" }, model: { ...base.model, maxPositionEmbeddings: 4096 }, policy: { ...base.policy, tensorParallelSize: 1 } };

function spec(over: Partial<ImageCheckSpec> = {}, model: Partial<LaunchInputs["model"]> = {}): ImageCheckSpec {
  return {
    engineId: "e1",
    hostAlias: "h1",
    plan: renderLaunchPlan({ ...launch, model: { ...launch.model, ...model } }),
    runtime: { kind: "native", vllmCommand: "vllm" },
    modelDir: "/models/tiny",
    pins: { vllm: "0.29.0" },
    dsRequired: false,
    deadlines: { inspectS: 30, checkS: 300 },
    ...over,
  };
}
const docker = (over: Partial<ImageCheckSpec> = {}, model: Partial<LaunchInputs["model"]> = {}) =>
  spec({ runtime: { kind: "docker", image: IMAGE, dockerCommand: "docker" }, ...over }, model) as DockerCheckSpec;

describe("image check: inputs", () => {
  it("accepts a well-formed spec", () => {
    expect(imageCheckProblems(spec())).to.deep.equal([]);
    expect(imageCheckProblems(docker())).to.deep.equal([]);
  });

  it("names every unusable field before anything remote runs", () => {
    const plan = renderLaunchPlan(launch);
    const problems = imageCheckProblems(
      spec({
        engineId: "e 1",
        plan: { ...plan, argv: plan.argv.filter((a, i, all) => a !== "--kv-transfer-config" && all[i - 1] !== "--kv-transfer-config"), env: { ...plan.env, "BAD-NAME": "1" } },
        modelDir: "/models/other",
        pins: { torch: "2.9 .0" },
        runtime: { kind: "docker", image: "vllm/vllm-openai:latest", dockerCommand: "-H x" },
        deadlines: { inspectS: 0, checkS: Number.NaN },
      }),
    );
    expect(problems).to.deep.equal([
      { property: "engineId", reason: 'engineId "e 1" must match /^[A-Za-z0-9][A-Za-z0-9_.-]*$/' },
      { property: "plan", reason: 'plan.engineId "e1" is not the engine e 1' },
      { property: "modelDir", reason: 'modelDir "/models/other" is not the plan\'s model "/models/tiny"' },
      { property: "plan", reason: "plan.argv has no --kv-transfer-config: the connector cannot be checked" },
      { property: "plan", reason: 'plan.env has "BAD-NAME", not an environment variable name' },
      { property: "pins", reason: "pins must pin vllm (the version discovery read)" },
      { property: "pins", reason: 'pins.torch must be a version without spaces, got "2.9 .0"' },
      { property: "runtime", reason: 'runtime.image "vllm/vllm-openai:latest" is not immutable: expected sha256:<64 hex> or <repo>@sha256:<64 hex>' },
      { property: "runtime", reason: 'runtime.dockerCommand "-H x" must be a command name or path' },
      { property: "deadlines", reason: "deadlines.inspectS must be a positive number of seconds, got 0" },
      { property: "deadlines", reason: "deadlines.checkS must be a positive number of seconds, got NaN" },
    ]);
  });
});

describe("image check: the request from the plan", () => {
  it("takes trust, tokenizer and connector from the plan's own arguments", () => {
    const { request, tokenizerMount } = runtimeCheckRequest(spec({ dsRequired: true }, { trustRemoteCode: true, tokenizer: "/models/tok" }));
    expect(tokenizerMount).to.equal(undefined);
    expect(request).to.deep.equal({
      pins: { vllm: "0.29.0" },
      kvTransferConfig: {
        kv_connector: "NixlConnector",
        kv_role: "kv_both",
        kv_load_failure_policy: "fail",
        kv_connector_extra_config: { backends: ["UCX"], enforce_handshake_compat: true, kv_lease_duration: 30 },
      },
      trustRemoteCode: true,
      dsRequired: true,
      model: "/models/tiny",
      tokenizer: "/models/tok",
    });
    expect(runtimeCheckRequest(spec()).request).to.deep.include({ trustRemoteCode: false, tokenizer: "/models/tiny" });
  });

  it("maps paths as the engine's container sees them", () => {
    const cases: Array<[string | undefined, string, string | undefined]> = [
      [undefined, "/model", undefined],
      ["/models/tiny/tok", "/model/tok", undefined],
      ["/srv/tokenizers/tiny", "/tokenizer", "/srv/tokenizers/tiny"],
      ["hf-org/tokenizer", "hf-org/tokenizer", undefined],
    ];
    for (const [tokenizer, seen, mount] of cases) {
      const prepared = runtimeCheckRequest(docker({}, { tokenizer }));
      expect([prepared.request.model, prepared.request.tokenizer, prepared.tokenizerMount], String(tokenizer)).to.deep.equal(["/model", seen, mount]);
    }
  });
});

describe("image check: commands", () => {
  it("runs the native check under the runtime's Python with the plan's environment, bounded", () => {
    const s = spec();
    const step = nativeCheckStep(s, runtimeCheckRequest(s), "/opt/venv/bin/python3");
    expect(step.timeoutS).to.equal(315);
    expect(step.command).to.contain(`'sh' '-c' 'if command -v timeout >/dev/null 2>&1; then exec timeout "$@"; else shift; exec "$@"; fi' 'sh' '300' 'env' 'VLLM_NIXL_SIDE_CHANNEL_HOST=198.18.0.11'`);
    expect(step.command).to.contain(`'/opt/venv/bin/python3' '-c' ${shq(RUNTIME_CHECK_PY)}`);
    expect(step.logArgv).to.include(`<runtime-check.py ${RUNTIME_CHECK_SHA256}>`).and.not.include(RUNTIME_CHECK_PY);
  });

  it("runs the docker check in a short-lived, offline container of the inspected image ID", () => {
    const s = docker({}, { tokenizer: "/srv/tok" });
    const step = dockerCheckStep(s, runtimeCheckRequest(s), IMAGE, checkContainerName("e1", "0123456789abcdef"));
    const argv = step.logArgv;
    expect(argv.slice(0, 10)).to.deep.equal(["docker", "run", "--rm", "--pull", "never", "--network", "none", "--name", "narwhal-check-e1-0123456789ab", "-v"]);
    expect(argv).to.include("/models/tiny:/model:ro").and.include("/srv/tok:/tokenizer:ro").and.include("CUDA_VISIBLE_DEVICES=0");
    expect(argv.slice(argv.indexOf("--entrypoint"), argv.indexOf("--entrypoint") + 4)).to.deep.equal(["--entrypoint", "python3", IMAGE, "-c"]);
  });

  it("gives a step that outlives its deadline exit 124 on the host", () => {
    const s = spec({ deadlines: { inspectS: 30, checkS: 1 }, plan: { ...spec().plan, env: {} } });
    // The runtime check's command with sh in place of the interpreter: `sh -c <script> <request>` just sleeps.
    const step = nativeCheckStep(s, runtimeCheckRequest(s), "sleep");
    const command = step.command.replace(`'-c' ${shq(RUNTIME_CHECK_PY)} `, "").replace(/'\{"pins.*\}'$/, "'20'");
    const started = Date.now();
    expect(spawnSync("sh", ["-c", command]).status).to.equal(124);
    expect(Date.now() - started).to.be.below(10_000);
  });
});

describe("image check: log lines and launch.json", () => {
  it("writes one sorted JSON object per line and reads it back", () => {
    const entry: CheckLogEntry = {
      checkId: "c1",
      engineId: "e1",
      hostAlias: "h1",
      planSha256: `sha256:${"1".repeat(64)}`,
      runtime: "native",
      startedAt: "2026-01-01T00:00:00.000Z",
      endedAt: "2026-01-01T00:00:01.000Z",
      steps: [{ name: "runtime check", argv: ["python3"], exitStatus: 1, startedAt: "2026-01-01T00:00:00.000Z", endedAt: "2026-01-01T00:00:01.000Z", stdout: "a\nb", stderr: "" }],
      verdict: { status: "fail", failures: [{ kind: "package", message: "m" }] },
    };
    const text = checkLogLine(entry) + checkLogLine({ ...entry, checkId: "c2" });
    expect(text.split("\n")).to.have.length(3);
    expect(text.startsWith('{"checkId":"c1","endedAt"')).to.equal(true);
    expect(parseCheckLog(text).map((e) => e.checkId)).to.deep.equal(["c1", "c2"]);
    expect(() => parseCheckLog('{"a":1}\nnot json\n')).to.throw("check log line 2 is not JSON");
  });

  it("records launch.json byte for byte as the native runtime writes it on the host", () => {
    const plan = renderLaunchPlan(launch);
    const text = launchJsonText(plan);
    expect(text.endsWith("\n")).to.equal(true);
    expect(startScript(plan, { runDir: "/run/e1", healthTimeoutS: 60, stopTimeoutS: 10 })).to.contain(`printf '%s\\n' ${shq(text.slice(0, -1))} > "$run/launch.json"`);
  });
});
