/**
 * The preflight against the pinned `narwhal-check --format json` on a fleet that declares its
 * engine_contract, as Gate E leaves it: two engine simulators, each with narwhal-inference's own
 * attestation sidecar (`narwhal-attest`) serving the document built from its proved generation and
 * captured cache layout, with the NIXL versions unread (the case the program meets today). Both must
 * print the same contract fingerprint, skip `connector_version, transfer_version` as undeclared, warn
 * alike, and call the run degraded (exit 3); the provider passes it unless strict. Every process stops.
 */
import { expect } from "chai";
import { execFile, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { attestationDocument, documentDigest, engineContract, sidecarEndpoint, sidecarStartScript, sidecarStopScript, type AttestationDocument, type SidecarOptions } from "../../lib/attestation";
import { captureLocal } from "../support/local-capture";
import { provider as generationProvider } from "../../dynamic-providers/engine-generation/provider";
import type { EngineGenerationOutputs } from "../../dynamic-providers/engine-generation/types";
import { runGates } from "../../dynamic-providers/preflight/provider";
import { parseNarwhalReport } from "../../lib/preflight";
import { attestationBindingDigest, type ProfileRow } from "../../lib/profiling";
import { freePort, http, KV_BOTH, makeModel, removeTemps, ROOT, startEngine, stopAll, tempDir, type SimEngine } from "../unit/sim-engine/helpers";
import { simProfileRow, writeSimFleet } from "../unit/sim-engine/sim-fleet";

const run = promisify(execFile);
const API_KEY = "sk-narwhal-preflight-contract-9a41c2";
const CHECK = path.join(ROOT, ".tools", "venv", "bin", "narwhal-check");
const NARWHAL_ATTEST = path.join(ROOT, ".tools", "venv", "bin", "narwhal-attest");
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

/** Gate C then E for one engine: proved, captured, attested by a running narwhal-attest. */
async function attest(id: string, engine: SimEngine): Promise<Attested> {
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
    // Not read yet, as in the program today: the contract leaves both undeclared.
    transfer: { nixlVersion: null, connectorVersion: null },
    discoveryDigest: "sha256:" + "d1".repeat(32),
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

describe("providers: preflight agrees with narwhal-check on a fleet with an engine_contract", function () {
  this.timeout(300_000);
  const attested: Attested[] = [];

  before(async () => {
    const model = makeModel({ config: { max_position_embeddings: 32768 } });
    for (const id of ["e0", "e1"]) attested.push(await attest(id, await startEngine({ model, args: ARGS, sim: { timeScale: 0.05, startupDelayS: 0 } })));
  });

  after(async () => {
    for (const a of attested) await sh(sidecarStopScript(a.sidecar));
    await stopAll();
    removeTemps();
  });

  it("prints narwhal's contract fingerprint, skips the undeclared fields in both, and both call the run degraded (exit 3)", async () => {
    const contract = engineContract(attested.map((a) => ({ engineId: a.id, contract: a.doc.contract })));
    expect(contract.undeclared).to.deep.equal(["connector_version", "transfer_version"]);
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
    const doc = {
      ...written.doc,
      engines: (written.doc.engines as Array<Record<string, unknown>>).map((e, i) => ({ ...e, attestation_url: attested[i].sidecar.endpoint.url })),
      engine_contract: contract.contract,
    };
    fs.writeFileSync(written.file, JSON.stringify(doc, null, 2));

    const narwhal = spawnSync(CHECK, ["--fleet", written.file, "--format", "json"], { env: { ...process.env, NARWHAL_ENGINE_API_KEY: API_KEY }, timeout: 120_000 });
    const result = JSON.parse(narwhal.stdout.toString());
    const theirs = parseNarwhalReport(narwhal.stderr.toString());
    const inputs = {
      stack: "provider-tests",
      fleetDocument: doc,
      engines: attested.map((a) => ({ engineId: a.id, generationDigest: a.generation.generationDigest, attestationDigest: a.attestationDigest, profileDigest: "sha256:" + "b2".repeat(32) })),
      profiles: rows,
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
    expect(contractLines[0].message).to.equal(`declared engine contract ${contract.fingerprint}`);
    expect(contractLines[1]).to.deep.equal({ status: "skip", message: `contract ${contract.fingerprint} undeclared: connector_version, transfer_version` });

    const unique = (notes: ReadonlyArray<{ message: string }>) => [...new Set(notes.map((n) => n.message))];
    expect({ status: ours.narwhal.status, exitCode: ours.narwhal.exitCode, skipped: unique(ours.skipped), warnings: unique(ours.warnings) }).to.deep.equal({
      status: result.status,
      exitCode: narwhal.status,
      skipped: result.data.skipped,
      warnings: result.data.warnings,
    });
    expect([ours.status, narwhal.status]).to.deep.equal(["degraded", 3]);

    let strict = "";
    await runGates({ ...inputs, strict: true }).catch((err: Error) => (strict = err.message));
    expect(strict).to.match(/^preflight degraded and preflight\.strict is on: skipped contract \(contract [0-9a-f]{16} undeclared: connector_version, transfer_version\); the router is not started on it /);
  });
});
