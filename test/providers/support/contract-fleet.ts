/**
 * A fleet as Gate E leaves it, on this machine: engine simulators, each proved, captured and attested by
 * narwhal-inference's own sidecar (`narwhal-attest`) serving the document this program builds, their profile
 * rows bound to what the sidecars serve, and the fleet document declaring their engine_contract.
 */
import { expect } from "chai";
import { shBounded as sh } from "../../support/sh-async";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { judgeRuntimeCheck } from "../../../lib/image-check/verdict";
import { RUNTIME_CHECK_PY, type RuntimeCheckRequest } from "../../../lib/image-check/python";
import { pthText } from "../../../sim/hosts/python-site";
import { attestationDocument, documentDigest, transferFacts, type AttestationDocument } from "../../../lib/attestation/document";
import { engineContract } from "../../../lib/attestation/contract";
import { sidecarEndpoint, sidecarStartScript, sidecarStopScript, type SidecarOptions } from "../../../lib/attestation/sidecar";
import { captureLocal } from "../../support/local-capture";
import { provider as generationProvider } from "../../../dynamic-providers/engine-generation/provider";
import type { EngineGenerationOutputs } from "../../../dynamic-providers/engine-generation/schema";
import { attestationBindingDigest, type ProfileRow } from "../../../lib/profiling/store";
import { freePort, http, KV_BOTH, makeModel, ROOT, startEngine, tempDir, type SimEngine, type StartOptions } from "../../unit/sim-engine/helpers";
import { simProfileRow, writeSimFleet } from "../../unit/sim-engine/sim-fleet";

export const API_KEY = "sk-narwhal-preflight-contract-9a41c2";
const NARWHAL_ATTEST = path.join(ROOT, ".tools", "venv", "bin", "narwhal-attest");
export const CHECK_DIGEST = "sha256:" + "d1".repeat(32);
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--tensor-parallel-size", "2", "--block-size", "16", "--kv-transfer-config", KV_BOTH, "--max-model-len", "16384", "--max-num-seqs", "8"];

export interface Attested {
  id: string;
  engine: SimEngine;
  doc: AttestationDocument;
  sidecar: SidecarOptions;
  generation: EngineGenerationOutputs;
  /** What the sidecar serves: its attestation digest and the profile binding digest. */
  attestationDigest: string;
  bindingDigest: string;
  /** How its engine was started: a restart in place starts it so again. */
  start: StartOptions;
}

/** The NIXL versions as the image check reads them: its runtime check, run by /usr/bin/python3 with the simulated vllm package as a host has it. */
export function checkedTransfer(model: string): { nixlVersion: string | null; connectorVersion: number | null; checkDigest: string } {
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
async function attest(id: string, engine: SimEngine, transfer: ReturnType<typeof checkedTransfer>, start: StartOptions): Promise<Attested> {
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
  return { id, engine, doc, sidecar, generation, attestationDigest: live.attestation_digest, bindingDigest: attestationBindingDigest(live.attestation_digest, live.launch_digest), start };
}

/**
 * The program's restart of one engine, in place: its sidecar and process stop, a new process starts on
 * the same ports and is proved, captured and attested again (a new generation, so a new binding digest).
 */
export async function restartAttested(a: Attested, transfer: ReturnType<typeof checkedTransfer>): Promise<Attested> {
  await sh(sidecarStopScript(a.sidecar));
  a.engine.proc.kill("SIGKILL");
  await a.engine.exited;
  const start = { ...a.start, port: a.engine.port, sidePort: a.engine.sidePort };
  return attest(a.id, await startEngine(start), transfer, start);
}

/**
 * Engines (`ids`, the first one prefill), each attested with `transfer`, their profile rows and the fleet
 * document declaring their contract. `kvLeaseS` sets the connector's `kv_lease_duration` (vLLM's 30 s by
 * default; model time, so 1.5 s at this time scale).
 */
export async function fleetOf(transfer: ReturnType<typeof checkedTransfer>, attested: Attested[], ids: readonly string[] = ["e0", "e1"], kvLeaseS?: number) {
  const model = makeModel({ config: { max_position_embeddings: 32768 } });
  const leased = JSON.stringify({ ...JSON.parse(KV_BOTH), kv_connector_extra_config: { kv_lease_duration: kvLeaseS } });
  const args = kvLeaseS === undefined ? ARGS : ARGS.map((a) => (a === KV_BOTH ? leased : a));
  for (const id of ids) {
    const start: StartOptions = { model, args, sim: { timeScale: 0.05, startupDelayS: 0 } };
    attested.push(await attest(id, await startEngine(start), transfer, start));
  }
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

