/**
 * The preflight against the pinned `narwhal-check --format json` on a fleet that declares its
 * engine_contract, as Gate E leaves it: two engine simulators, each with narwhal-inference's own
 * attestation sidecar (`narwhal-attest`) serving the document built from its proved generation, captured
 * cache layout and the NIXL versions the image check's runtime check read of the simulated vLLM package.
 * Both print the same contract fingerprint and call the run a pass (exit 0), and narwhal's own
 * `finalize-fleet` writes exactly the program's contract. With the NIXL versions unread (an attestation
 * from an image check made before they were read), both skip `connector_version, transfer_version` as
 * undeclared and call the run degraded (exit 3); the provider passes that unless strict. Every process stops.
 */
import { expect } from "chai";
import { execFile, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { judgeRuntimeCheck, RUNTIME_CHECK_PY, type RuntimeCheckRequest } from "../../lib/image-check";
import { pthText } from "../../sim/hosts/python-site";
import {
  attestationDocument,
  documentDigest,
  engineContract,
  sidecarEndpoint,
  sidecarStartScript,
  sidecarStopScript,
  transferFacts,
  type AttestationDocument,
  type SidecarOptions,
} from "../../lib/attestation";
import { captureLocal } from "../support/local-capture";
import { provider as generationProvider } from "../../dynamic-providers/engine-generation/provider";
import type { EngineGenerationOutputs } from "../../dynamic-providers/engine-generation/schema";
import { runGates } from "../../dynamic-providers/preflight/provider";
import { parseNarwhalReport } from "../../lib/preflight";
import { attestationBindingDigest, type ProfileRow } from "../../lib/profiling";
import { freePort, http, KV_BOTH, makeModel, removeTemps, ROOT, startEngine, stopAll, tempDir, type SimEngine } from "../unit/sim-engine/helpers";
import { simProfileRow, writeSimFleet } from "../unit/sim-engine/sim-fleet";

const run = promisify(execFile);
const API_KEY = "sk-narwhal-preflight-contract-9a41c2";
const CHECK = path.join(ROOT, ".tools", "venv", "bin", "narwhal-check");
const NARWHAL_ATTEST = path.join(ROOT, ".tools", "venv", "bin", "narwhal-attest");
const PYTHON = path.join(ROOT, ".tools", "venv", "bin", "python");
const CHECK_DIGEST = "sha256:" + "d1".repeat(32);
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--tensor-parallel-size", "2", "--block-size", "16", "--kv-transfer-config", KV_BOTH, "--max-model-len", "16384", "--max-num-seqs", "8"];

interface Attested {
  id: string;
  engine: SimEngine;
  doc: AttestationDocument;
  sidecar: SidecarOptions;
  generation: EngineGenerationOutputs;
  /** What the sidecar serves: its attestation digest and the profile binding digest. */
  attestationDigest: string;
  bindingDigest: string;
}

async function sh(script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run("sh", ["-c", script], { timeout: 90_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** The NIXL versions as the image check reads them: its runtime check, run by /usr/bin/python3 with the simulated vllm package as a host has it. */
function checkedTransfer(model: string): { nixlVersion: string | null; connectorVersion: number | null; checkDigest: string } {
  const home = tempDir("preflight-check-home-");
  const py = spawnSync("/usr/bin/python3", ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], { encoding: "utf8" }).stdout.trim();
  const site = path.join(home, ".local", "lib", `python${py}`, "site-packages");
  fs.mkdirSync(site, { recursive: true });
  fs.writeFileSync(path.join(home, "sim-config.json"), JSON.stringify({ version: "0.29.0" }));
  fs.writeFileSync(path.join(site, "narwhal-sim-vllm.pth"), pthText(path.join(home, "sim-config.json")));
  const request: RuntimeCheckRequest = { pins: { vllm: "0.29.0" }, kvTransferConfig: JSON.parse(KV_BOTH), trustRemoteCode: false, dsRequired: false, model, tokenizer: model };
  const r = spawnSync("/usr/bin/python3", ["-c", RUNTIME_CHECK_PY, JSON.stringify(request)], { encoding: "utf8", env: { PATH: "/usr/bin:/bin", HOME: home } });
  const judged = judgeRuntimeCheck("image check of engine e0 on host local", request, { exitStatus: r.status, stdout: r.stdout, stderr: r.stderr }, "/usr/bin/python3");
  expect(judged.failures).to.deep.equal([]);
  return transferFacts({ checkDigest: CHECK_DIGEST, findings: judged.findings });
}

/** Gate C then E for one engine: proved, captured, attested by a running narwhal-attest. */
async function attest(id: string, engine: SimEngine, transfer: ReturnType<typeof checkedTransfer>): Promise<Attested> {
  const planSha256 = "sha256:" + Buffer.from(id.padEnd(32, "-")).toString("hex");
  const subject = { engineId: id, hostAlias: "local", url: engine.url, apiKey: API_KEY, processIdentity: { hostAlias: "local", pid: engine.proc.pid! } };
  const generation = (await generationProvider.create({ ...subject, planSha256, expectedVersion: "0.29.0", servedName: "tiny", probeTimeoutS: 10 })).outs as EngineGenerationOutputs;
  const capture = await captureLocal(id, engine, { blockSize: 16, tensorParallelSize: 2, dtype: "auto", kvCacheDtype: "auto" });
  const doc = attestationDocument({
    engineId: id,
    plan: { argv: ["vllm", "serve", "/models/tiny", ...ARGS], planSha256, tensorParallelSize: 2 },
    layout: capture.layout,
    cacheLayoutDigest: capture.cacheLayoutDigest,
    generation: { generationDigest: generation.generationDigest, version: generation.version, processIdentity: generation.processIdentity },
    model: { architecture: "LlamaForCausalLM", numHiddenLayers: null, configSha256: "c0".repeat(32) },
    transfer,
  });
  const sidecar: SidecarOptions = {
    engineId: id,
    command: NARWHAL_ATTEST,
    runDir: path.join(tempDir("preflight-attest-"), id),
    document: JSON.stringify(doc),
    documentDigest: documentDigest(doc),
    engineUrl: engine.url,
    owner: { hostAlias: "local", pid: engine.proc.pid! },
    endpoint: sidecarEndpoint(engine.url, await freePort()),
    startTimeoutS: 60,
    stopTimeoutS: 10,
  };
  const started = await sh(sidecarStartScript(sidecar));
  expect(started.code, started.stderr).to.equal(0);
  const live = (await http(sidecar.endpoint.url)).json as { attestation_digest: string; launch_digest?: string | null };
  return { id, engine, doc, sidecar, generation, attestationDigest: live.attestation_digest, bindingDigest: attestationBindingDigest(live.attestation_digest, live.launch_digest) };
}

/** Two engines, each attested with `transfer`, their profile rows and the fleet document declaring their contract. */
async function fleetOf(transfer: ReturnType<typeof checkedTransfer>, attested: Attested[]) {
  const model = makeModel({ config: { max_position_embeddings: 32768 } });
  for (const id of ["e0", "e1"]) attested.push(await attest(id, await startEngine({ model, args: ARGS, sim: { timeScale: 0.05, startupDelayS: 0 } }), transfer));
  const contract = engineContract(attested.map((a) => ({ engineId: a.id, contract: a.doc.contract })));
  const rows: ProfileRow[] = [];
  // 50 ms of prefill margin: pace compares each engine with its own profile, and at this time scale
  // HTTP overhead on a loaded machine (narwhal-check's more than ours) would otherwise decide that gate.
  for (const a of attested) {
    const r = await simProfileRow(a.id, a.engine);
    rows.push({ ...r, ttft_c: r.ttft_c + 0.05, generation_digest: a.bindingDigest });
  }
  const written = writeSimFleet(tempDir("preflight-contract-"), {
    model: "tiny",
    engines: attested.map((a, i) => ({ iid: a.id, url: a.engine.url, role: i === 0 ? "prefill" : "decode" })),
    rows,
    tpotS: 0.125,
    writer: "preflight-contract",
  });
  const withoutContract = {
    ...written.doc,
    engines: (written.doc.engines as Array<Record<string, unknown>>).map((e, i) => ({ ...e, attestation_url: attested[i].sidecar.endpoint.url })),
  };
  const doc = { ...withoutContract, engine_contract: contract.contract };
  fs.writeFileSync(written.file, JSON.stringify(doc, null, 2));
  return { contract, rows, doc, withoutContract, file: written.file };
}

/** narwhal-check and our preflight over the same document: both reports, and our gates' verdicts checked against theirs. */
async function bothChecks(f: Awaited<ReturnType<typeof fleetOf>>, attested: Attested[]) {
  const narwhal = spawnSync(CHECK, ["--fleet", f.file, "--format", "json"], { env: { ...process.env, NARWHAL_ENGINE_API_KEY: API_KEY }, timeout: 120_000 });
  const result = JSON.parse(narwhal.stdout.toString());
  const theirs = parseNarwhalReport(narwhal.stderr.toString());
  const inputs = {
    stack: "provider-tests",
    fleetDocument: f.doc,
    engines: attested.map((a) => ({ engineId: a.id, generationDigest: a.generation.generationDigest, attestationDigest: a.attestationDigest, profileDigest: "sha256:" + "b2".repeat(32) })),
    profiles: f.rows,
    profileStoreDigest: "sha256:" + "c3".repeat(32),
    pairs: "mesh" as const,
    repeats: 1,
    schedule: "concurrent" as const,
    apiKey: API_KEY,
  };
  const ours = await runGates(inputs);
  const mine = Object.fromEntries(ours.gates.map((g) => [g.gate, g.verdict]));
  console.log(`      narwhal-check exit ${narwhal.status} (${result.status}); ours ${ours.status}: ${JSON.stringify(mine)}; warnings ${JSON.stringify(ours.warnings)}`);
  expect(mine, `ours vs narwhal-check\n${narwhal.stderr.toString()}\nours: ${JSON.stringify(ours.gates, null, 1)}`).to.deep.equal(theirs.verdicts);
  // The contract lines, fingerprint included, are narwhal's own.
  const contractLines = ours.gates.find((g) => g.gate === "contract")!.lines;
  expect(contractLines.slice(0, 2)).to.deep.equal(theirs.lines.contract.slice(0, 2));
  expect(contractLines[0].message).to.equal(`declared engine contract ${f.contract.fingerprint}`);
  const unique = (notes: ReadonlyArray<{ message: string }>) => [...new Set(notes.map((n) => n.message))];
  expect({ status: ours.narwhal.status, exitCode: ours.narwhal.exitCode, skipped: unique(ours.skipped), warnings: unique(ours.warnings) }).to.deep.equal({
    status: result.status,
    exitCode: narwhal.status,
    skipped: result.data.skipped,
    warnings: result.data.warnings,
  });
  return { ours, narwhal, contractLines, inputs };
}

describe("providers: preflight agrees with narwhal-check on a fleet with an engine_contract", function () {
  this.timeout(300_000);
  const attested: Attested[] = [];

  afterEach(async () => {
    for (const a of attested.splice(0)) await sh(sidecarStopScript(a.sidecar));
    await stopAll();
  });
  after(() => removeTemps());

  it("a contract with the NIXL versions the runtime check read: the same fingerprint and a pass in both, and finalize-fleet writes the same contract", async () => {
    const transfer = checkedTransfer(makeModel());
    expect(transfer).to.deep.equal({ nixlVersion: "0.7.1", connectorVersion: 9, checkDigest: CHECK_DIGEST });
    const f = await fleetOf(transfer, attested);
    expect(f.contract.undeclared).to.deep.equal([]);
    expect(f.contract.contract).to.include({ transfer_version: "0.7.1", connector_version: 9 });
    const { ours, narwhal } = await bothChecks(f, attested);
    expect([ours.status, narwhal.status, ours.skipped]).to.deep.equal(["pass", 0, []]);

    // narwhal's finalize-fleet over the same sidecars, on the document without a contract: it accepts
    // every engine's contract as complete and writes the one the program declared.
    const dir = path.dirname(f.file);
    const bare = path.join(dir, "fleet.bare.json");
    fs.writeFileSync(bare, JSON.stringify(f.withoutContract, null, 2), { mode: 0o600 });
    const finalize = spawnSync(
      PYTHON,
      ["-c", "import json, sys; from pathlib import Path; from narwhal.deployment.attestation_contract.fleet import finalize_fleet; print(json.dumps(finalize_fleet(Path(sys.argv[1])).fields()))", bare],
      { cwd: dir, env: { ...process.env, NARWHAL_ENGINE_API_KEY: API_KEY }, encoding: "utf8", timeout: 120_000 },
    );
    expect(finalize.status, finalize.stderr).to.equal(0);
    expect(JSON.parse(finalize.stdout)).to.deep.equal(f.contract.contract);
    expect(JSON.parse(fs.readFileSync(bare, "utf8")).engine_contract).to.deep.equal(f.contract.contract);
  });

  it("a contract from a check made before the NIXL versions were read: both skip them as undeclared, a degraded run (exit 3) the provider passes unless strict", async () => {
    const f = await fleetOf({ nixlVersion: null, connectorVersion: null, checkDigest: CHECK_DIGEST }, attested);
    expect(f.contract.undeclared).to.deep.equal(["connector_version", "transfer_version"]);
    const { ours, narwhal, contractLines, inputs } = await bothChecks(f, attested);
    expect(contractLines[1]).to.deep.equal({ status: "skip", message: `contract ${f.contract.fingerprint} undeclared: connector_version, transfer_version` });
    expect([ours.status, narwhal.status]).to.deep.equal(["degraded", 3]);
    let strict = "";
    await runGates({ ...inputs, strict: true }).catch((err: Error) => (strict = err.message));
    expect(strict).to.match(/^preflight degraded and preflight\.strict is on: skipped contract \(contract [0-9a-f]{16} undeclared: connector_version, transfer_version\); the router is not started on it /);
  });
});
