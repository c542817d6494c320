/**
 * The image check provider's own methods, called as the engine calls them, against simulated host sim1
 * (native runtime: its `vllm` shim runs the engine simulator, and its login's python3 imports the
 * simulated vllm package, sim/python). Every check appends to the engine's log under
 * runs/provider-image-check/evidence; each test uses its own engine id, so the logs start empty.
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { provider } from "../../dynamic-providers/image-check/provider";
import type { ImageCheckInputs, ImageCheckOutputs } from "../../dynamic-providers/image-check/schema";
import { EvidenceStore, evidenceRoot } from "../../lib/evidence";
import { launchJsonText, parseCheckLog } from "../../lib/image-check";
import { LaunchInputs, renderLaunchPlan } from "../../lib/launch/plan";
import { simFleet, writeCheckpoint } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import { hostPaths } from "../../sim/hosts/paths";
import { buildSimImage } from "../../sim/image/build";
import { IMAGE_SITE_PACKAGES, NIXL_METADATA_PY } from "../../sim/image/python";
import { SIM_PYTHON_DIR, writeSimPythonSite } from "../../sim/hosts/python-site";
import { rejection } from "../support/rejection";
import { simLaunch, simLogin } from "./support/sim-launch";

const STACK = "provider-image-check";
const root = evidenceRoot(process.cwd(), STACK);

function launch(h: SimHost, id: string, model: Partial<LaunchInputs["model"]> = {}): LaunchInputs {
  return simLaunch(h, { id, port: 8391, nixlPort: 5791, gpuIds: [0] }, { model });
}

function inputs(h: SimHost, id: string, extra: { model?: Partial<LaunchInputs["model"]> } & Partial<ImageCheckInputs> = {}): ImageCheckInputs {
  const { model, ...rest } = extra;
  const plan = renderLaunchPlan(launch(h, id, model));
  return {
    engineId: id,
    hostAlias: h.alias,
    stack: STACK,
    ...simLogin(h),
    plan,
    planSha256: plan.planSha256,
    runtime: { kind: "native", vllmCommand: "vllm" },
    modelDir: plan.argv[2],
    pins: { vllm: simVersion(h) },
    dsRequired: false,
    deadlines: { inspectS: 60, checkS: 120 },
    ...rest,
  };
}

function simVersion(h: SimHost): string {
  return (JSON.parse(fs.readFileSync(h.simConfigPath, "utf8")) as { version?: string }).version ?? "0.29.0";
}

const engineId = (label: string) => `ic-${label}-${randomBytes(3).toString("hex")}`;
const logText = (id: string) => fs.readFileSync(path.join(root, "image-check", "logs", `${id}.jsonl`), "utf8");

describe("providers: image check against simulated host sim1", function () {
  this.timeout(180_000);
  let h: SimHost;
  const scratch: string[] = [];

  before(() => {
    const host = simFleet().find((x) => x.alias === "sim1");
    if (!host) throw new Error("simulated host sim1 is not up: run `npm run sim -- up` first");
    h = host;
    writeSimPythonSite(hostPaths(h.alias));
  });
  after(() => {
    for (const dir of scratch) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("passes on the host's runtime and records launch.json, the runtime identity and vllm_api_version", async () => {
    const id = engineId("pass");
    const i = inputs(h, id);
    const { id: resourceId, outs } = await provider.create(i);
    const o = outs as ImageCheckOutputs;
    expect(resourceId).to.equal(`${id}-${o.checkId.slice(0, 12)}`);
    expect(o.vllmApiVersion).to.equal(simVersion(h));
    expect(o.identity).to.deep.include({ kind: "native", command: "vllm", path: "/usr/local/sbin/vllm", interpreter: "/usr/bin/python3", interpreterSource: "login-python3", cliVersion: simVersion(h) });
    expect(o.findings).to.deep.equal({
      vllmApiVersion: simVersion(h),
      packages: { vllm: simVersion(h) },
      connector: "vllm.distributed.kv_transfer.kv_connector.v1.nixl_connector.NixlConnector",
      tokenizer: "transformers.tokenization_utils_fast.PreTrainedTokenizerFast",
      dsLayout: null,
      customCode: { required: false, trusted: false, reasons: [] },
      // The engine contract's NIXL versions, as the host's runtime carries them (the simulated vllm package).
      nixl: { connectorVersion: 9, connectorSource: path.join(SIM_PYTHON_DIR, "vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py"), version: "0.7.1", distribution: "nixl" },
    });

    const store = new EvidenceStore(root);
    const record = await store.read(o.evidence.relativePath, o.evidence.digest);
    expect(record).to.deep.include({ kind: "image-check", subject: { kind: "engine", alias: id }, verdict: { status: "pass", reasons: [] } });
    expect(record.inputs).to.deep.include({ planSha256: i.planSha256, pins: i.pins, launchJson: o.launchJson.sha256 });
    const launchJson = await store.readArtifact(o.launchJson.relativePath, o.launchJson.sha256);
    expect(launchJson.toString("utf8")).to.equal(launchJsonText(i.plan));
    expect(JSON.stringify(record)).to.not.include(i.privateKey!.split("\n")[1]);

    const [line] = parseCheckLog(logText(id));
    expect(line).to.deep.include({ checkId: o.checkId, engineId: id, planSha256: i.planSha256, runtime: "native", verdict: { status: "pass", failures: [] } });
    expect(line.steps.map((s) => [s.name, s.exitStatus])).to.deep.equal([["runtime identity", 0], ["runtime check", 0]]);
    expect(line.steps[1].stdout).to.include('NARWHAL_CHECK {"check": "tokenizer"');
    expect(o.log).to.deep.include({ relativePath: `image-check/logs/${id}.jsonl`, offset: 0 });

    // A repeated check of the same runtime and plan certifies the same thing, under a new id, on a new line.
    const again = (await provider.create(i)).outs as ImageCheckOutputs;
    expect(again.checkDigest).to.equal(o.checkDigest);
    expect(again.checkId).to.not.equal(o.checkId);
    expect(parseCheckLog(logText(id)).map((l) => l.checkId)).to.deep.equal([o.checkId, again.checkId]);
  });

  it("reads the NIXL versions inside the engine image too: a container of the simulator image on the daemon sim1's docker CLI reaches", async () => {
    const image = buildSimImage({ log: () => undefined }).id;
    // The daemon is the machine's: the checkpoint it mounts is a folder of the machine's.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "image-check-docker-"));
    scratch.push(dir);
    writeCheckpoint(dir);
    const id = engineId("docker");
    const base = inputs(h, id, { model: { checkpointDir: dir } });
    const o = (await provider.create({ ...base, runtime: { kind: "docker", image, dockerCommand: "docker" }, modelDir: dir, pins: { vllm: "0.29.0" } })).outs as ImageCheckOutputs;
    expect(o.identity).to.deep.include({ kind: "docker", imageId: image });
    expect(o.findings.nixl).to.deep.equal({ connectorVersion: 9, connectorSource: `${IMAGE_SITE_PACKAGES}/${NIXL_METADATA_PY}`, version: "0.7.1", distribution: "nixl" });
  });

  it("fails on a package pin mismatch, names the package, and keeps the earlier log lines", async () => {
    const id = engineId("pin");
    await provider.create(inputs(h, id));
    const before = logText(id);
    const err = await rejection(provider.create(inputs(h, id, { pins: { vllm: simVersion(h), nixl: "0.6.0" } })));
    expect(err.code).to.equal("NARWHAL_IMAGE_CHECK_FAILED");
    expect(err.message).to.match(/^image check failed \(package\):\n/);
    expect(err.message).to.contain(`  - image check of engine ${id} on host sim1: package nixl is pinned to 0.6.0 but the runtime has 0.7.1\n`);
    expect(err.message).to.contain(`image-check/logs/${id}.jsonl (line at byte ${Buffer.byteLength(before)})`);

    const after = logText(id);
    expect(after.startsWith(before), "the earlier line is kept byte for byte").to.equal(true);
    const lines = parseCheckLog(after);
    expect(lines.map((l) => l.verdict.status)).to.deep.equal(["pass", "fail"]);
    expect(lines[1].verdict.failures).to.deep.equal([{ kind: "package", message: `image check of engine ${id} on host sim1: package nixl is pinned to 0.6.0 but the runtime has 0.7.1` }]);
    expect(lines[1].steps[1].stdout).to.include('"mismatches": [{"expected": "0.6.0", "found": "0.7.1", "package": "nixl"}]');

    // The failed run has its own record too, so a failure is evidence, not just a log line.
    const store = new EvidenceStore(root);
    const record = (await Promise.all((await store.list("image-check")).map((r) => store.read(r.relativePath, r.digest)))).find(
      (r) => r.subject.alias === id && r.verdict.status === "fail",
    );
    expect(record?.verdict.reasons).to.deep.equal([`image check of engine ${id} on host sim1: package nixl is pinned to 0.6.0 but the runtime has 0.7.1`]);
  });

  it("fails the identity when the plan was derived from another vLLM version than the host runs", async () => {
    const id = engineId("version");
    const err = await rejection(provider.create(inputs(h, id, { pins: { vllm: "0.28.0" } })));
    expect(err.message).to.match(/^image check failed \(identity, package\):\n/);
    expect(err.message).to.contain(`/usr/local/sbin/vllm --version reports ${simVersion(h)} but the plan was derived from vLLM 0.28.0; rerun discovery after changing the runtime`);
    expect(err.message).to.contain(`package vllm is pinned to 0.28.0 but the runtime has ${simVersion(h)}`);
  });

  it("constructs a custom-code tokenizer only with the plan's --trust-remote-code", async () => {
    const dir = path.join(h.dir, "srv", `remote-code-${randomBytes(3).toString("hex")}`);
    scratch.push(dir);
    writeCheckpoint(dir);
    const tokConfig = path.join(dir, "tokenizer_config.json");
    fs.writeFileSync(tokConfig, JSON.stringify({ ...JSON.parse(fs.readFileSync(tokConfig, "utf8")), auto_map: { AutoTokenizer: ["tokenization_tiny.TinyTokenizer", null] } }));
    const checkpointDir = `/srv/${path.basename(dir)}`;

    const id = engineId("trust");
    const err = await rejection(provider.create(inputs(h, id, { model: { checkpointDir } })));
    expect(err.message).to.match(/^image check failed \(custom-code, tokenizer\):\n/);
    expect(err.message).to.contain(`the checkpoint needs --trust-remote-code (${checkpointDir}/tokenizer_config.json has auto_map) but the plan does not set it; rerun discovery so the plan adds it`);
    expect(err.message).to.contain(
      `tokenizer ${checkpointDir} did not load with trust_remote_code=False: ValueError: The repository ${checkpointDir} contains custom code which must be executed`,
    );

    const trusted = inputs(h, id, { model: { checkpointDir, trustRemoteCode: true } });
    expect(trusted.plan.argv).to.include("--trust-remote-code");
    const o = (await provider.create(trusted)).outs as ImageCheckOutputs;
    expect(o.findings.customCode).to.deep.equal({ required: true, trusted: true, reasons: [`${checkpointDir}/tokenizer_config.json has auto_map`] });
    expect(parseCheckLog(logText(id)).map((l) => l.verdict.status)).to.deep.equal(["fail", "pass"]);
  });

  it("requires the DS conv-state layout only when the model needs it, from the plan's environment", async () => {
    const id = engineId("ds");
    const err = await rejection(provider.create(inputs(h, id, { dsRequired: true })));
    expect(err.message).to.contain("the model keeps a convolutional SSM state, which needs VLLM_SSM_CONV_STATE_LAYOUT=DS, but the runtime resolves SD");
    const o = (await provider.create(inputs(h, id, { dsRequired: true, model: { ssmConvStateLayoutDS: true } }))).outs as ImageCheckOutputs;
    expect(o.findings.dsLayout).to.equal("DS");
  });

  it("logs a check whose login is refused, with no step run", async () => {
    const other = simFleet().find((x) => x.alias !== h.alias && x.hostKey !== h.hostKey);
    if (!other) throw new Error("needs a second simulated host for its host key");
    const id = engineId("login");
    const good = inputs(h, id);
    const err = await rejection(provider.create({ ...good, login: { ...good.login, hostKey: other.hostKey } }));
    expect(err.message).to.match(/^image check failed \(login\):\n/);
    expect(err.message).to.contain(`image check of engine ${id} on host sim1: host sim1: the SSH host key changed (pinned ${other.fingerprint}, presented ${h.fingerprint}); nothing was run on it.`);
    const [line] = parseCheckLog(logText(id));
    expect(line).to.deep.include({ steps: [], verdict: { status: "fail", failures: [{ kind: "login", message: err.message.split("\n")[1].slice(4) }] } });
  });

  it("refuses unusable inputs before logging in, naming the field", async () => {
    const id = engineId("input");
    const good = inputs(h, id);
    const bad = { ...good, login: { ...good.login, host: "198.18.0.250", connectTimeoutS: 1 }, pins: { torch: "2.9.0" }, planSha256: "sha256:" + "0".repeat(64) };
    const checked = await provider.check!(good, bad);
    expect(checked.failures).to.deep.equal([
      { property: "planSha256", reason: `planSha256 "sha256:${"0".repeat(64)}" is not the plan's own hash "${good.planSha256}"` },
      { property: "pins", reason: "pins must pin vllm (the version discovery read)" },
    ]);
    const err = await rejection(provider.create(bad));
    expect(err.code).to.equal("NARWHAL_IMAGE_CHECK_INPUT");
    expect(fs.existsSync(path.join(root, "image-check", "logs", `${id}.jsonl`))).to.equal(false);
  });

  it("replaces on a new plan hash and updates in place on a new login", async () => {
    const id = engineId("diff");
    const olds = { ...inputs(h, id) } as ImageCheckOutputs;
    const replanned = inputs(h, id, { model: { maxPositionEmbeddings: 1024 } });
    expect(await provider.diff!(id, olds, replanned)).to.deep.equal({ changes: true, replaces: ["planSha256"], deleteBeforeReplace: false });
    const relogged = { ...olds, login: { ...olds.login, connectTimeoutS: 5 } };
    expect(await provider.diff!(id, olds, relogged)).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
  });
});
