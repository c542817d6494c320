/**
 * Gate E against real processes on 127.0.0.1: engine simulators proved and captured by the Gate C
 * providers, the attestation sidecar narwhal-inference ships (`narwhal-attest`) started and stopped by
 * this program's own start and stop scripts, and the Attestation provider's methods called as the
 * dynamic provider host calls them. Every process started here is stopped.
 */
import { expect } from "chai";
import { shBounded as sh } from "../support/sh-async";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { homedir, tmpdir } from "node:os";
import * as path from "node:path";
import { attestationDocument, documentDigest, type AttestationDocument } from "../../lib/attestation/document";
import { chooseDocument } from "../../lib/attestation/runbook-document";
import { engineContract } from "../../lib/attestation/contract";
import { sidecarEndpoint, sidecarStartScript, sidecarStopScript, type SidecarOptions } from "../../lib/attestation/sidecar";
import { provider as attestation } from "../../dynamic-providers/attestation/provider";
import { Attestation } from "../../dynamic-providers/attestation/resource";
import type { AttestationInputs, AttestationOutputs } from "../../dynamic-providers/attestation/schema";
import { captureLocal } from "../support/local-capture";
import { provider as generationProvider } from "../../dynamic-providers/engine-generation/provider";
import type { EngineGenerationOutputs } from "../../dynamic-providers/engine-generation/schema";
import { EvidenceStore, evidenceRoot } from "../../lib/evidence/store";
import { pidAlive } from "../../sim/hosts/exec";
import { runbookAttestationDocument } from "../unit/attestation/runbook-document-fixture";
import { runbookListenerPidsScript } from "../../lib/runtime/runbook-survey";
import { freePort, http, KV_BOTH, makeModel, removeTemps, ROOT, spawnEngine, startEngine, stopAll, tempDir, type SimEngine } from "../unit/sim-engine/helpers";
import { trustStoreVariables } from "../support/trust-store-env";

const STACK = "provider-tests";
const API_KEY = "sk-narwhal-attest-41d07a";
const NARWHAL_ATTEST = path.join(ROOT, ".tools", "venv", "bin", "narwhal-attest");
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--tensor-parallel-size", "2", "--block-size", "16", "--kv-transfer-config", KV_BOTH, "--max-model-len", "4096"];

/** One engine as Gate C leaves it: running, proved and captured. */
interface Proved {
  id: string;
  engine: SimEngine;
  argv: string[];
  planSha256: string;
  generation: EngineGenerationOutputs;
  capture: Awaited<ReturnType<typeof captureLocal>>;
}

async function prove(id: string, engine: SimEngine, extra: string[] = []): Promise<Proved> {
  const planSha256 = "sha256:" + Buffer.from(id.padEnd(32, "-")).toString("hex");
  const subject = { engineId: id, hostAlias: "local", url: engine.url, apiKey: API_KEY, processIdentity: { hostAlias: "local", pid: engine.proc.pid! } };
  const generation = (await generationProvider.create({ ...subject, planSha256, expectedVersion: "0.29.0", servedName: "tiny", probeTimeoutS: 10 })).outs as EngineGenerationOutputs;
  const dtype = extra.includes("--dtype") ? extra[extra.indexOf("--dtype") + 1] : "auto";
  const capture = await captureLocal(id, engine, { blockSize: 16, tensorParallelSize: 2, dtype, kvCacheDtype: "auto" });
  return { id, engine, argv: ["vllm", "serve", "/models/tiny", ...ARGS, ...extra], planSha256, generation, capture };
}

function documentOf(p: Proved): AttestationDocument {
  return attestationDocument({
    engineId: p.id,
    plan: { argv: p.argv, planSha256: p.planSha256, tensorParallelSize: 2 },
    layout: p.capture.layout,
    cacheLayoutDigest: p.capture.cacheLayoutDigest,
    generation: { generationDigest: p.generation.generationDigest, version: p.generation.version, processIdentity: p.generation.processIdentity },
    model: { architecture: "LlamaForCausalLM", numHiddenLayers: null, configSha256: "c0".repeat(32) },
    transfer: { nixlVersion: "0.7.1", connectorVersion: 9, checkDigest: "sha256:" + "d1".repeat(32) },
  });
}

const sidecarDirs: string[] = [];

function sidecarOptions(p: Proved, doc: AttestationDocument, port: number, runDir: string): SidecarOptions {
  return {
    engineId: p.id,
    command: NARWHAL_ATTEST,
    runDir,
    document: JSON.stringify(doc),
    documentDigest: documentDigest(doc),
    engineUrl: p.engine.url,
    owner: { hostAlias: "local", pid: p.engine.proc.pid! },
    endpoint: sidecarEndpoint(p.engine.url, port),
    startTimeoutS: 60,
    stopTimeoutS: 10,
  };
}

async function startSidecar(o: SidecarOptions): Promise<{ pid: number; startedAt: string }> {
  if (!sidecarDirs.includes(o.runDir)) sidecarDirs.push(o.runDir);
  const started = await sh(sidecarStartScript(o));
  expect(started.code, started.stderr).to.equal(0);
  return JSON.parse(started.stdout.trim().split("\n").pop()!);
}

function inputs(p: Proved, doc: AttestationDocument, o: SidecarOptions, sidecar: { pid: number; startedAt: string }): AttestationInputs {
  return {
    engineId: p.id,
    hostAlias: "local",
    url: o.endpoint.url,
    document: doc,
    documentDigest: documentDigest(doc),
    generationDigest: p.generation.generationDigest,
    processStartTime: p.generation.processStartTime,
    version: p.generation.version,
    processIdentity: p.generation.processIdentity,
    planSha256: p.planSha256,
    cacheLayoutDigest: p.capture.cacheLayoutDigest,
    sidecar,
    probeTimeoutS: 10,
    stack: STACK,
  };
}

async function rejection(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p;
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error("expected a rejection");
}


describe("Gate E: attestation sidecars and the Attestation provider", function () {
  this.timeout(120_000);
  let model: string;
  let e1: Proved;
  let doc: AttestationDocument;
  let opts: SidecarOptions;
  let sidecar: { pid: number; startedAt: string };
  let attested: AttestationOutputs;

  before(async () => {
    model = makeModel();
    e1 = await prove("e1", await startEngine({ model, args: ARGS }));
    doc = documentOf(e1);
    opts = sidecarOptions(e1, doc, await freePort(), path.join(tempDir("attest-run-"), "e1"));
  });

  after(async () => {
    for (const runDir of sidecarDirs) await sh(sidecarStopScript({ engineId: "test", runDir, stopTimeoutS: 5 }));
    await stopAll();
    removeTemps();
  });

  it("the start script writes the document privately, starts narwhal-attest and waits for its /health", async () => {
    sidecar = await startSidecar(opts);
    expect(pidAlive(sidecar.pid)).to.equal(true);
    // TLS roots from a CA directory or the operator's own setting, never certifi's bundle per client (lib/trust-store.ts).
    expect(trustStoreVariables(sidecar.pid), "the sidecar's SSL_CERT_* variables").to.not.be.empty;
    const file = path.join(opts.runDir, "engine-attestation.json");
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(fs.statSync(opts.runDir).mode & 0o777).to.equal(0o700);
    expect(JSON.parse(fs.readFileSync(file, "utf8"))).to.deep.equal(doc);
    expect((await http(opts.endpoint.healthUrl)).status).to.equal(200);
    // Adopted, not started twice; another document is refused while this one serves.
    expect(await startSidecar(opts)).to.deep.equal(sidecar);
    const other = await sh(sidecarStartScript({ ...opts, documentDigest: "sha256:" + "00".repeat(32) }));
    expect(other.code).to.equal(1);
    expect(other.stderr).to.contain(`attestation sidecar of engine e1: pid ${sidecar.pid} already serves another document`);
  });

  it("create: the attestation binds the proved generation, plan, layout and document, and is kept as evidence", async () => {
    const i = inputs(e1, doc, opts, sidecar);
    expect((await attestation.check!({}, i)).failures).to.equal(undefined);
    const { id, outs } = await attestation.create(i);
    attested = outs as AttestationOutputs;
    const live = (await http(opts.endpoint.url)).json;
    expect(attested.attestationDigest).to.equal(live.attestation_digest);
    expect(id).to.equal(`e1-attestation-${live.attestation_digest.slice(7, 19)}`);
    expect(live.engine).to.deep.equal({ version: "0.29.0", process_start_time_seconds: e1.generation.processStartTime });
    expect(live.launch).to.include({ generation_sha256: e1.generation.generationDigest, plan_sha256: e1.planSha256, cache_layout_sha256: e1.capture.cacheLayoutDigest });
    expect(attested.contract).to.deep.equal(doc.contract);
    expect(attested.contract).to.include({ model_dtype: "bfloat16", kv_heads: e1.capture.layout.ranks[0].numKvHeads, transfer_mode: "pull", enforce_handshake_compat: true, connector_version: 9 });
    expect(Math.abs(attested.processClock - e1.generation.processStartTime)).to.be.below(5);

    const store = new EvidenceStore(evidenceRoot(ROOT, STACK));
    const rec = await store.read(attested.evidence!.relativePath, attested.evidence!.digest);
    expect(rec.kind).to.equal("attestation");
    expect(rec.verdict).to.deep.equal({ status: "pass", reasons: [] });
    expect(rec.inputs).to.include({ generationDigest: e1.generation.generationDigest, documentDigest: documentDigest(doc) });
    expect(rec.artifacts.map((a) => a.name)).to.deep.equal(["engine-attestation.json"]);
    const kept = await store.readArtifact(rec.artifacts[0].relativePath, rec.artifacts[0].sha256);
    expect(JSON.parse(kept.toString("utf8"))).to.deep.equal(live);
    expect(JSON.stringify(rec)).to.not.contain(API_KEY);
  });

  it("read while nothing changed: attested, no diff; a new generation or sidecar replaces", async () => {
    const { props } = await attestation.read!("id", attested);
    expect(props).to.include({ observedAttestation: attested.attestationDigest, observedState: "attested" });
    const same = inputs(e1, doc, opts, sidecar);
    expect(await attestation.diff!("id", props, same)).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
    expect(await attestation.diff!("id", props, { ...same, probeTimeoutS: 30 })).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
    const moved = { ...same, generationDigest: "sha256:" + "7f".repeat(32), documentDigest: "sha256:" + "8e".repeat(32), sidecar: { pid: 1, startedAt: "x" } };
    expect((await attestation.diff!("id", props, moved)).replaces).to.deep.equal(["documentDigest", "generationDigest", "sidecar"]);
  });

  it("refuses a sidecar that attests another plan than the one expected, keeping the failed answer", async () => {
    const err = await rejection(attestation.create({ ...inputs(e1, doc, opts, sidecar), planSha256: "sha256:" + "ab".repeat(32) }));
    expect(err.code).to.equal("NARWHAL_ATTESTATION_MISMATCH");
    expect(err.message).to.contain(`engine e1 on host local: attestation sidecar at ${opts.endpoint.url}: the attestation does not bind the proved engine (kept as attestation/`);
    expect(err.message).to.contain(`  - launch.plan_sha256 is "${e1.planSha256}", expected sha256:${"ab".repeat(32)}`);
  });

  it("an engine restarted on its port: the sidecar answers 503, read shows it, create refuses; a new sidecar attests the new generation", async () => {
    const { port, sidePort } = e1.engine;
    await e1.engine.stop();
    const restarted = await spawnEngine({ model, args: ARGS, port, sidePort });
    await restarted.ready();

    const health = await http(opts.endpoint.healthUrl);
    expect(health.status).to.equal(503);
    expect(health.json.detail).to.equal("engine process changed; restart the attestation sidecar");
    const { props } = await attestation.read!("id", attested);
    expect(props).to.include({ observedAttestation: "none", observedState: "engine-changed" });
    expect((props as AttestationOutputs).observedDetail).to.contain("engine process changed");
    expect(await attestation.diff!("id", props, inputs(e1, doc, opts, sidecar))).to.deep.equal({ changes: true, replaces: ["attestation"], deleteBeforeReplace: false });
    const refused = await rejection(attestation.create(inputs(e1, doc, opts, sidecar)));
    expect(refused.code).to.equal("NARWHAL_ATTESTATION_ENGINE_CHANGED");
    expect(refused.message).to.contain("/health answered 503 (engine process changed; restart the attestation sidecar)");

    // What pulumi up does next: the generation is proved again, which gives a new document, so the sidecar is replaced.
    const stopped = await sh(sidecarStopScript(opts));
    expect(stopped.code).to.equal(0);
    expect(pidAlive(sidecar.pid)).to.equal(false);
    expect(fs.existsSync(path.join(opts.runDir, "pid"))).to.equal(false);
    const again = await prove("e1", restarted);
    expect(again.generation.generationDigest).to.not.equal(e1.generation.generationDigest);
    const newDoc = documentOf(again);
    const newOpts = { ...sidecarOptions(again, newDoc, opts.endpoint.port, opts.runDir) };
    const newSidecar = await startSidecar(newOpts);
    expect(newSidecar.pid).to.not.equal(sidecar.pid);
    const i = inputs(again, newDoc, newOpts, newSidecar);
    expect((await attestation.diff!("id", attested, i)).replaces).to.include.members(["documentDigest", "generationDigest", "processStartTime", "sidecar"]);
    const renewed = (await attestation.create(i)).outs as AttestationOutputs;
    expect(renewed.attestationDigest).to.not.equal(attested.attestationDigest);
    expect(renewed.contract).to.deep.equal(attested.contract);
    e1 = again;
    doc = newDoc;
    opts = newOpts;
    sidecar = newSidecar;
    attested = renewed;
  });

  it("a restarted sidecar is a new sidecar input, and a sidecar that died shows as unreachable", async () => {
    await sh(sidecarStopScript(opts));
    const { props } = await attestation.read!("id", attested);
    expect(props).to.include({ observedAttestation: "none", observedState: "unreachable" });
    expect((await attestation.diff!("id", props, inputs(e1, doc, opts, sidecar))).replaces).to.deep.equal(["attestation"]);
    const restarted = await startSidecar(opts);
    expect(restarted.pid).to.not.equal(sidecar.pid);
    expect((await attestation.diff!("id", attested, inputs(e1, doc, opts, restarted))).replaces).to.deep.equal(["sidecar"]);
    const outs = (await attestation.create(inputs(e1, doc, opts, restarted))).outs as AttestationOutputs;
    // The same engine and document: the sidecar attests the same thing again.
    expect(outs.attestationDigest).to.equal(attested.attestationDigest);
    sidecar = restarted;
  });

  it("engine_contract refuses a fleet where one engine was launched with another dtype, naming the field and the engines", async () => {
    const e2 = await prove("e2", await startEngine({ model, args: ARGS }));
    const e3 = await prove("e3", await startEngine({ model, args: [...ARGS, "--dtype", "float16"] }), ["--dtype", "float16"]);
    const contracts = [{ engineId: "e1", contract: attested.contract }];
    for (const p of [e2, e3]) {
      const d = documentOf(p);
      const o = sidecarOptions(p, d, await freePort(), path.join(path.dirname(opts.runDir), p.id));
      const outs = (await attestation.create(inputs(p, d, o, await startSidecar(o)))).outs as AttestationOutputs;
      contracts.push({ engineId: p.id, contract: outs.contract });
    }
    expect(contracts[2].contract.model_dtype).to.equal("float16");
    expect(engineContract(contracts.slice(0, 2)).contract.model_dtype).to.equal("bfloat16");
    let message = "";
    try {
      engineContract(contracts);
    } catch (err) {
      expect((err as { code: string }).code).to.equal("NARWHAL_CONTRACT_MISMATCH");
      message = (err as Error).message;
    }
    expect(message.split("\n").slice(1)).to.deep.equal(['  - model_dtype: "bfloat16" (e1, e2) vs "float16" (e3)']);
  });

  it("the start script explains a sidecar that cannot bind the engine and stops nothing else", async () => {
    const o = sidecarOptions(e1, { ...doc, contract: { ...doc.contract, engine_version: "0.28.0" } }, await freePort(), path.join(path.dirname(opts.runDir), "bad"));
    sidecarDirs.push(o.runDir);
    const failed = await sh(sidecarStartScript(o));
    expect(failed.code).to.equal(1);
    expect(failed.stderr).to.contain("attestation sidecar of engine e1 exited before answering /health; last log lines:");
    expect(failed.stderr).to.contain("engine runs version 0.29.0, document expects 0.28.0");
    expect(fs.existsSync(path.join(o.runDir, "pid"))).to.equal(false);
    const busy = await sh(sidecarStartScript({ ...o, runDir: path.join(path.dirname(opts.runDir), "busy"), endpoint: opts.endpoint }));
    expect(busy.code).to.equal(1);
    expect(busy.stderr).to.contain(`something already answers on ${opts.endpoint.healthUrl}`);
  });

  it("takes the port over from the runbook's own sidecar and serves its document, so the attestation digest stays the runbook's", async () => {
    // The runbook's sidecar: narwhal-attest serving the launch directory's document, as `attestation_contract serve --run` execs it.
    const runbook = tempDir("runbook-run-");
    const text = JSON.stringify(runbookAttestationDocument(doc.contract, runbook, doc.launch.args), null, 2) + "\n";
    fs.writeFileSync(path.join(runbook, "engine-attestation.json"), text, { mode: 0o600 });
    const port = await freePort();
    const child = spawn(NARWHAL_ATTEST, ["--document", path.join(runbook, "engine-attestation.json"), "--engine-base", e1.engine.url, "--host", "127.0.0.1", "--port", String(port), "--backend", "vllm"], { cwd: runbook, detached: true, stdio: "ignore" });
    child.unref();
    const endpoint = sidecarEndpoint(e1.engine.url, port);
    for (let i = 0; i < 100 && (await http(endpoint.healthUrl).catch(() => ({ status: 0 }))).status !== 200; i++) await new Promise((r) => setTimeout(r, 200));
    const runbookAnswer = (await http(endpoint.url)).json;

    const chosen = chooseDocument(doc, { run: runbook, text, processStartS: e1.generation.processStartTime }, e1.generation.processStartTime);
    expect(chosen.source, chosen.reason).to.equal("runbook");
    const o: SidecarOptions = { ...sidecarOptions(e1, doc, port, path.join(path.dirname(opts.runDir), "taken-over")), document: chosen.text, documentDigest: chosen.digest, endpoint };
    sidecarDirs.push(o.runDir);
    // Discovery counts it as the runbook's, not a stranger's, only for this very launch directory.
    expect((await sh(runbookListenerPidsScript([runbook]))).stdout.split("\n")).to.include(String(child.pid));
    expect((await sh(runbookListenerPidsScript([path.join(runbook, "elsewhere")]))).stdout.trim()).to.equal("");
    // Only a listener naming this very launch directory is the program's to stop.
    for (const other of [undefined, path.join(runbook, "elsewhere")]) {
      const refused = await sh(sidecarStartScript({ ...o, ...(other ? { takeoverRun: other } : {}) }));
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.contain(`something already answers on ${endpoint.healthUrl}`);
      expect(pidAlive(child.pid!)).to.equal(true);
    }
    const taken = await sh(sidecarStartScript({ ...o, takeoverRun: runbook }));
    expect(taken.code, taken.stderr).to.equal(0);
    expect(taken.stderr).to.contain(`attestation sidecar of engine e1: stopping the runbook's sidecar (pid ${child.pid}, started for ${runbook}) on port ${port}`);
    expect(pidAlive(child.pid!)).to.equal(false);
    const started = JSON.parse(taken.stdout.trim().split("\n").pop()!) as { pid: number; startedAt: string };

    const { outs } = await attestation.create({ ...inputs(e1, doc, o, started), document: chosen.document, documentDigest: chosen.digest, runbookDocument: { run: runbook, reason: chosen.reason! } });
    const a = outs as AttestationOutputs;
    expect(a.attestationDigest, "the same digest the runbook's sidecar answered").to.equal(runbookAnswer.attestation_digest);
    expect(a.launchDigest).to.equal(runbookAnswer.launch_digest);
    const record = JSON.parse(fs.readFileSync(path.join(evidenceRoot(ROOT, STACK), a.evidence!.relativePath), "utf8"));
    expect(record.observations.runbookDocument).to.deep.equal({ run: runbook, reason: chosen.reason });
    // Without the runbook mode, the launcher's launch record does not bind the program's plan: refused, naming it.
    const strict = await rejection(attestation.create({ ...inputs(e1, doc, o, started), document: chosen.document, documentDigest: chosen.digest }));
    expect(strict.message).to.contain(`launch.plan_sha256 is null, expected ${e1.planSha256}`);
  });

  it("check names bad inputs; the serialised shim holds no secret and no absolute path", async () => {
    const { failures } = await attestation.check!({}, { ...inputs(e1, doc, opts, sidecar), url: opts.endpoint.healthUrl, planSha256: "abc", sidecar: { pid: 0, startedAt: "" } });
    expect(failures).to.deep.equal([
      { property: "planSha256", reason: 'planSha256 must be sha256:<64 hex>, got "abc"' },
      { property: "url", reason: `url must be the sidecar's http://<address>:<port>/v1/attestation, got "${opts.endpoint.healthUrl}"` },
      { property: "sidecar", reason: "sidecar.pid must be a positive integer, got 0" },
    ]);
    const { serializeFunction } = require("@pulumi/pulumi").runtime;
    // The SDK serialises the provider object itself, so the closure holds the object, not the class.
    const shim = Attestation.provider;
    const { text } = await serializeFunction(() => shim);
    // Every type shares the one shim, a reference to the installed package; a resource names its module in its own __implementation prop.
    expect(text).to.contain('require("narwhal-fleet-provider-shim').and.not.contain("dynamic-providers/attestation");
    for (const forbidden of [API_KEY, ROOT, tmpdir(), homedir()]) expect(text).to.not.contain(forbidden);
  });
});
