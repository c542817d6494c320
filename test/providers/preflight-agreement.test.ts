/**
 * Our preflight and the pinned `narwhal-check --format json` against the same fleet document and the
 * same three engine simulators on 127.0.0.1: the same verdict per gate on a healthy fleet and on
 * failing ones (a dead engine, a model mismatch, an engine slower than its profile, an infeasible
 * TPOT, a producer that returns no handoff, consumers that still read a producer restarted under the
 * same pinned engine_id from its dead NIXL agent), and the same whole-run status and exit code (degraded without an engine_contract, exit 3;
 * failed_gate, exit 1), skips and warnings. Profiles are written from each engine's ground truth and
 * live generation. The provider's run fails naming gate and engines and keeps its evidence without the
 * key; a degraded run passes unless strict. Every process is stopped.
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { runGates } from "../../dynamic-providers/preflight/provider";
import { simUp, sshExec } from "../../sim/hosts";
import { simLogin } from "./support/sim-launch";
import { parseNarwhalReport } from "../../lib/preflight/narwhal-report";
import { runPreflight } from "../../lib/preflight/run";
import { runSummary } from "../../lib/preflight/status";
import type { GateProfile } from "../../lib/preflight/judge";
import type { ProfileRow } from "../../lib/profiling/store";
import { http, KV_BOTH, makeModel, removeTemps, ROOT, startEngine, stopAll, tempDir, type SimEngine } from "../unit/sim-engine/helpers";
import { simPreflight, simProfileRow, writeSimFleet } from "../unit/sim-engine/sim-fleet";

const API_KEY = "sk-narwhal-preflight-7d2e41";
const CHECK = path.join(ROOT, ".tools", "venv", "bin", "narwhal-check");
const PACE_MARGIN_S = 0.05;
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--max-model-len", "16384", "--max-num-seqs", "8", "--kv-transfer-config", KV_BOTH];

interface Fleet {
  /** Which simulators make up the fleet, by id (default e0, e1, e2). */
  members?: string[];
  model?: string;
  tpotS?: number;
  /** Per engine, a factor applied to the saved prefill curve (below 1: the engine is slower than its profile says). */
  profileScale?: Record<string, number>;
}

describe("providers: preflight agrees with narwhal-check per gate", function () {
  this.timeout(300_000);
  const engines: SimEngine[] = [];
  const ids = ["e0", "e1", "e2"];
  const rows = new Map<string, ProfileRow>();

  let model: string;
  const byId = new Map<string, SimEngine>();

  before(async () => {
    model = makeModel({ config: { max_position_embeddings: 32768 } });
    for (const iid of ids) {
      const e = await startEngine({ model, args: ARGS, sim: { timeScale: 0.05, startupDelayS: 0 } });
      engines.push(e);
      byId.set(iid, e);
      rows.set(iid, await simProfileRow(iid, e));
    }
  });

  after(async () => {
    await stopAll();
    removeTemps();
  });

  function writeFleet(f: Fleet): { file: string; doc: Record<string, any>; profiles: Map<string, GateProfile> } {
    const dir = tempDir("preflight-fleet-");
    const members = f.members ?? ids;
    const scaled = members.map((iid) => {
      const r = rows.get(iid)!;
      const k = f.profileScale?.[iid];
      // An engine that is not meant to be slow gets PACE_MARGIN_S on its constant: at this time scale a
      // pace probe is ~15 ms of engine time, so on a loaded machine narwhal-check's own HTTP overhead
      // (Python) would otherwise decide the pace gate, and the test would compare load, not rules.
      if (k === undefined) return { ...r, ttft_c: r.ttft_c + PACE_MARGIN_S };
      return { ...r, ttft_a: r.ttft_a * k, ttft_b: r.ttft_b * k, ttft_c: r.ttft_c * k };
    });
    const engines = members.map((iid, i) => ({ iid, url: byId.get(iid)!.url, role: i === 0 ? "prefill" : "decode" }));
    const { file, doc } = writeSimFleet(dir, { model: f.model ?? "tiny", engines, rows: scaled, tpotS: f.tpotS ?? 0.125, writer: "preflight-agreement" });
    return { file, doc, profiles: new Map(scaled.map((r) => [r.iid, r])) };
  }

  async function both(f: Fleet) {
    const { file, doc, profiles } = writeFleet(f);
    const t0 = Date.now();
    const narwhal = spawnSync(CHECK, ["--fleet", file, "--format", "json"], { env: { ...process.env, NARWHAL_ENGINE_API_KEY: API_KEY }, timeout: 120_000 });
    const narwhalS = (Date.now() - t0) / 1000;
    const result = JSON.parse(narwhal.stdout.toString());
    const theirs = parseNarwhalReport(narwhal.stderr.toString());
    const { plan, observer } = simPreflight(doc, profiles, API_KEY, "concurrent", async (iid) => byId.get(iid)!.stdout + byId.get(iid)!.stderr);
    const t1 = Date.now();
    const ours = await runPreflight(plan, observer).finally(() => observer.close());
    const oursS = (Date.now() - t1) / 1000;
    const mine = Object.fromEntries(ours.gates.map((g) => [g.gate, g.verdict]));
    console.log(`      narwhal-check ${narwhalS.toFixed(1)} s (exit ${narwhal.status}, ${result.status}), ours ${oursS.toFixed(1)} s: ${JSON.stringify(mine)}`);
    expect(mine, `ours vs narwhal-check\n${narwhal.stderr.toString()}\nours: ${JSON.stringify(ours.gates, null, 1)}`).to.deep.equal(theirs.verdicts);
    // The whole run: narwhal's status and exit code, its skips and its warnings. Ours files a KV skip
    // under both KV gates; narwhal prints it once.
    const summary = runSummary(ours.gates);
    const unique = (notes: ReadonlyArray<{ message: string }>) => [...new Set(notes.map((n) => n.message))];
    expect({ status: summary.narwhal.status, exitCode: summary.narwhal.exitCode, skipped: unique(summary.skipped), warnings: unique(summary.warnings) }, narwhal.stderr.toString()).to.deep.equal({
      status: result.status,
      exitCode: narwhal.status,
      skipped: result.data.skipped,
      warnings: result.data.warnings,
    });
    return { mine, narwhal: result, ours, summary, file, doc, profiles };
  }

  it("a healthy fleet: every gate passes in both, the run is degraded in both, the whole mesh transferred", async () => {
    const { mine, narwhal, ours, summary } = await both({});
    expect(Object.values(mine).every((v) => v === "pass")).to.equal(true);
    // No engine_contract declared: narwhal-check notes the skip and reports "degraded" (exit 3), nothing failed.
    expect(narwhal.data.failed).to.deep.equal([]);
    expect(narwhal.data.skipped).to.deep.equal(["no engine_contract declared; checking live vLLM versions only"]);
    expect([summary.status, summary.skipped]).to.deep.equal(["degraded", [{ gate: "contract", message: "no engine_contract declared; checking live vLLM versions only" }]]);
    // And it warns that the first-token deadline has no calibration evidence, as narwhal-check does.
    expect(summary.warnings.map((w) => w.gate)).to.deep.equal(["calibration"]);
    expect(ours.transfers).to.have.length(6);
  });

  it("an infeasible TPOT fails slo in both, and the run fails in both (exit 1)", async () => {
    // The simulators' floor at 1 request and 256 KV tokens is about 0.74 ms of wall clock (time scale 0.05).
    const { mine, summary, narwhal } = await both({ tpotS: 0.0005 });
    expect(mine.slo).to.equal("fail");
    expect([summary.status, narwhal.status, narwhal.exit_code]).to.deep.equal(["fail", "failed_gate", 1]);
  });

  it("an engine slower than its saved profile fails pace in both and blocks the KV gates", async () => {
    const { mine } = await both({ profileScale: { e2: 0.2 } });
    expect(mine).to.include({ pace: "fail", produce: "skip", consume: "skip" });
  });

  it("a model mismatch fails model in both and blocks the KV gates", async () => {
    const { mine } = await both({ model: "other" });
    expect(mine).to.include({ model: "fail", consume: "skip" });
  });

  it("an engine marked dead fails reach in both", async () => {
    const dead = await http(`${engines[2].controlUrl}/dead`, { body: { dead: true } });
    expect(dead.status).to.equal(200);
    try {
      const { mine } = await both({});
      expect(mine.reach).to.equal("fail");
    } finally {
      await http(`${engines[2].controlUrl}/dead`, { body: { dead: false } });
    }
  });

  it("a producer that returns no handoff fails produce in both; the others still consume", async () => {
    const plain = await startEngine({ model, args: ARGS.slice(0, -2), sim: { timeScale: 0.05, startupDelayS: 0 } });
    byId.set("e3", plain);
    rows.set("e3", await simProfileRow("e3", plain));
    const { mine, ours } = await both({ members: ["e0", "e1", "e3"] });
    expect(mine).to.include({ produce: "fail", consume: "pass" });
    expect(ours.gates.find((g) => g.gate === "produce")!.lines.find((l) => l.status === "fail")!.message).to.match(/^e3 prefill leg: .*no kv_transfer_params/);
    expect(ours.transfers.map((t) => `${t.producer}>${t.consumer}`)).to.deep.equal(["e0>e1", "e1>e0"]);
    await plain.stop();
  });

  it("an engine whose /tokenize cannot be reached fails tokenize in both", async () => {
    const blind = await startEngine({ model, args: ARGS, sim: { timeScale: 0.05, startupDelayS: 0, tokenizeRoute: false } });
    byId.set("e4", blind);
    rows.set("e4", await simProfileRow("e4", blind));
    try {
      const { mine, ours } = await both({ members: ["e0", "e1", "e4"] });
      expect(mine).to.include({ reach: "pass", tokenize: "fail" });
      expect(ours.gates.find((g) => g.gate === "tokenize")!.lines.find((l) => l.status === "fail")!.message).to.match(/^e4 /);
    } finally {
      await blind.stop();
    }
  });

  it("the provider's run fails naming gate and engines, keeps its evidence, and never records the key", async () => {
    const { doc, profiles } = writeFleet({ model: "other" });
    const inputs = {
      stack: "provider-tests",
      fleetDocument: doc,
      engines: ids.map((iid) => ({ engineId: iid, generationDigest: rows.get(iid)!.generation_digest, attestationDigest: "sha256:" + "a1".repeat(32), profileDigest: "sha256:" + "b2".repeat(32) })),
      profiles: [...profiles.values()] as ProfileRow[],
      profileStoreDigest: "sha256:" + "c3".repeat(32),
      pairs: "mesh" as const,
      repeats: 1,
      schedule: "concurrent" as const,
      apiKey: API_KEY,
    };
    // Each engine's log where its runtime writes it, on an engine host reached over SSH (here sim1 holds all three).
    const [h] = (await simUp({ aliases: ["sim1"] })).hosts;
    const { login, privateKey } = simLogin(h);
    const logDir = "/srv/provider-tests/preflight-logs";
    for (const iid of ids) {
      const text = Buffer.from(`${byId.get(iid)!.stderr.slice(-2000)}\n${iid}: last line before the failing gate\n`).toString("base64");
      const r = await sshExec(h, `mkdir -p ${logDir} && echo ${text} | base64 -d > ${logDir}/${iid}.log`, { timeoutMs: 30_000 });
      expect(r.code, r.stderr).to.equal(0);
    }
    const engineLogs = ids.map((iid) => ({ engineId: iid, hostAlias: "sim1", login, engineLog: { kind: "files" as const, paths: [`${logDir}/missing.log`, `${logDir}/${iid}.log`] } }));
    let message = "";
    await runGates({ ...inputs, engineLogs, engineHostSecrets: { sim1: { privateKey } } }).catch((err: Error) => (message = err.message));
    expect(message).to.match(/^preflight failed: model \(e0, e1, e2\); pace \(e0, e1, e2\); tokenize \(e0, e1, e2\); the router is not started on it \(gate lines, probes and engine logs kept as (\S+)\)$/);
    const store = path.join(ROOT, "runs", "provider-tests", "evidence");
    const record = path.join(store, /kept as (\S+)\)$/.exec(message)![1]);
    const text = fs.readFileSync(record, "utf8");
    expect(text).to.not.include(API_KEY).and.not.include("PRIVATE KEY");
    expect(JSON.parse(text).verdict.status).to.equal("fail");
    // Every engine a failing line names has its log tail kept, read from the first of its log places that exists.
    const tails = JSON.parse(text).observations.engineLogs as Array<{ engineId: string; source: string; log: string }>;
    expect(tails.map((k) => [k.engineId, k.source])).to.deep.equal(ids.map((iid) => [iid, `host sim1: ${logDir}/${iid}.log`]));
    for (const k of tails) expect(fs.readFileSync(path.join(store, k.log), "utf8")).to.match(new RegExp(`${k.engineId}: last line before the failing gate\\n$`));
    await sshExec(h, `rm -rf ${logDir}`, { timeoutMs: 30_000 });
    const passed = await runGates({ ...inputs, fleetDocument: writeFleet({}).doc });
    expect(passed.gates.every((g) => g.verdict === "pass")).to.equal(true);
    expect(passed.rounds).to.equal(6);
    // Degraded (no engine_contract) passes the up, and says so in its outputs and evidence...
    expect([passed.status, passed.narwhal, passed.skipped.map((s) => s.gate)]).to.deep.equal(["degraded", { status: "degraded", exitCode: 3 }, ["contract"]]);
    const kept = JSON.parse(fs.readFileSync(path.join(ROOT, "runs", "provider-tests", "evidence", passed.evidence!.relativePath), "utf8"));
    expect([kept.verdict.status, kept.observations.status, kept.verdict.reasons]).to.deep.equal(["pass", "degraded", ["contract skipped: no engine_contract declared; checking live vLLM versions only"]]);
    // ...unless the stack asks for strict.
    let strict = "";
    await runGates({ ...inputs, fleetDocument: writeFleet({}).doc, strict: true }).catch((err: Error) => (strict = err.message));
    expect(strict).to.match(/^preflight degraded and preflight\.strict is on: skipped contract \(no engine_contract declared; checking live vLLM versions only\); the router is not started on it /);
  });

  it("consumers keep reading a producer restarted under the same engine_id from its dead agent, fail in both, and keep the pair's logs", async () => {
    // Every consumer has already read from e0 (the mesh above), so each holds e0's NIXL state under its
    // engine_id. Restarted with that id pinned, e0 is never handshaken again (vLLM 0.29.0 keys peers by
    // engine_id, not host:port): the consumers' reads go to the old process's agent. A new id would be
    // handshaken again and pass; sim/engine's tests hold that and NIXL's crash.
    const old = byId.get("e0")!;
    const engineId = /Initializing NIXL worker (\S+)/.exec(old.stdout)![1];
    await old.stop();
    const pinned = [...ARGS.slice(0, -1), JSON.stringify({ kv_connector: "NixlConnector", kv_role: "kv_both", engine_id: engineId })];
    const restarted = await startEngine({ model, args: pinned, port: old.port, sidePort: old.sidePort, sim: { timeScale: 0.05, startupDelayS: 0 } });
    byId.set("e0", restarted);
    // A fresh simulator process runs its first requests slower than the warm ones beside it (code not yet
    // compiled), and at this time scale the pace probe is 30 ms: warm it as a served engine would be, so
    // both tools judge the same engine, not its first milliseconds.
    for (let i = 0; i < 8; i++) {
      await http(`${restarted.url}/v1/completions`, { body: { model: "tiny", prompt: "warm up", max_tokens: 2 }, headers: { authorization: `Bearer ${API_KEY}` } });
    }
    // Re-profiled after the restart, as the runbook asks: only the consumers still hold the old agent.
    rows.set("e0", await simProfileRow("e0", restarted));
    const { mine, ours } = await both({});
    expect(mine).to.include({ produce: "pass", consume: "fail" });
    const failed = ours.transfers.filter((t) => t.status === "failed");
    expect(failed.map((t) => `${t.producer}>${t.consumer}`).sort()).to.deep.equal(["e0>e1", "e0>e2"]);
    expect(failed[0].error).to.match(/NIXL read of request \S+ failed: remote agent \S+ of engine \S+ is gone|answered 5\d\d/);
    expect(failed[0].logs!.consumer).to.match(new RegExp(`NIXL transfer failure: transfer_failed\\. NIXL read of request \\S+ failed: remote agent \\S+ of engine ${engineId} is gone`));
  });
});
