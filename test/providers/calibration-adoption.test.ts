/**
 * Adoption of a runbook's first-token calibration by the Calibration provider, against two engine
 * simulators on 127.0.0.1: the file the pinned `narwhal-check --calibrate-first-token` wrote is adopted
 * with no completion sent (the engines' own request counters prove it) and kept byte for byte as
 * evidence; after one engine restarts the same file is refused, naming that engine's process start and
 * generation, and the deadline is measured afresh. Every process is stopped.
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { calibrateFleet } from "../../dynamic-providers/calibration/provider";
import type { CalibrationInputs } from "../../dynamic-providers/calibration/schema";
import { KV_BOTH, makeModel, removeTemps, ROOT, startEngine, stopAll, tempDir, completedRequests, type SimEngine } from "../unit/sim-engine/helpers";

const STACK = "provider-tests";
const API_KEY = "sk-narwhal-calibration-adopt-93e1c7";
const CONTEXT = 2048;
const LENGTHS = [64, CONTEXT - 1];
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--max-model-len", String(CONTEXT), "--max-num-seqs", "8", "--kv-transfer-config", KV_BOTH];
const SIM = { timeScale: 0.01, startupDelayS: 0 };
const CHECK = path.join(ROOT, ".tools", "venv", "bin", "narwhal-check");
/** narwhal-check's whole calibration run, 400 samples at this time scale. */
const NARWHAL_TIMEOUT_MS = 180_000;
const sha = (file: string) => "sha256:" + createHash("sha256").update(fs.readFileSync(file)).digest("hex");
const evidenceFile = (relativePath: string) => path.join(ROOT, "runs", STACK, "evidence", relativePath);


describe("providers: Calibration adopts a runbook's first-token calibration", function () {
  this.timeout(300_000);
  const engines: SimEngine[] = [];
  let model: string;
  let dir: string;
  let file: string;

  const fleetDocument = () => ({
    schema: "narwhal.fleet",
    schema_version: 2,
    model: "tiny",
    engines: engines.map((e, i) => ({ iid: `e${i}`, url: e.url, role: i === 0 ? "prefill" : "decode", pin: i === 1 })),
    slo: { ttft_s: 10, tpot_s: 0.125 },
    serving: { request_timeout_s: 60, prefill_timeout_s: 30 },
    engine: { first_token_timeout_s: 2.5, health_timeout_s: 5, engine_api_key_env: "NARWHAL_ENGINE_API_KEY" },
  });

  const inputs = (): CalibrationInputs => ({
    stack: STACK,
    fleetDocument: fleetDocument(),
    model: "tiny",
    runtime: { kind: "native" },
    engines: engines.map((_, i) => ({ engineId: `e${i}`, role: i === 0 ? "prefill" : "decode", pin: i === 1, generationDigest: "sha256:" + "a".repeat(64), attestationDigest: "sha256:" + "b".repeat(64), transport: "tcp", maxModelLen: CONTEXT })),
    inputLengths: LENGTHS,
    samplesPerGroup: 100,
    observationBoundS: 10,
    maxFailuresPerGroup: 5,
    routerOverheadS: 0.05,
    schedule: "concurrent",
    apiKey: API_KEY,
    adopt: { path: file, sha256: sha(file), pinned: sha(file) },
  });

  before(async () => {
    model = makeModel({ config: { max_position_embeddings: 32768 } });
    for (let i = 0; i < 2; i++) engines.push(await startEngine({ model, args: ARGS, sim: SIM }));
    dir = tempDir("runbook-");
    fs.writeFileSync(path.join(dir, "fleet.json"), JSON.stringify(fleetDocument()));
    file = path.join(dir, "runs", "first-token.json");
    // The runbook's step, as its operator runs it: no engine contract, so the file binds each engine's identity generation.
    // e1 is a pinned decode engine: restarting it later leaves no NIXL state of it on e0 (in pull mode only the reader keeps peer state).
    const run = spawnSync(CHECK, ["--fleet", path.join(dir, "fleet.json"), "--calibrate-first-token", "--input-tokens", LENGTHS.join(","), "--samples", "100", "--observation-timeout-s", "10", "--calibration-out", file], {
      cwd: dir,
      env: { ...process.env, NARWHAL_ENGINE_API_KEY: API_KEY },
      encoding: "utf8",
      timeout: NARWHAL_TIMEOUT_MS,
    });
    expect(run.status, run.stdout + run.stderr).to.equal(0);
  });

  after(async () => {
    await stopAll();
    removeTemps();
  });

  it("adopts the file without sending a completion, keeps it as evidence and proposes the deadline its raw attempts give", async () => {
    const doc = JSON.parse(fs.readFileSync(file, "utf8"));
    const before = await Promise.all(engines.map(completedRequests));
    expect(before.every((n) => n >= 200), "narwhal-check sampled the engines").to.equal(true);
    const t0 = Date.now();
    const r = await calibrateFleet(inputs());
    expect(await Promise.all(engines.map(completedRequests))).to.deep.equal(before);

    expect(r.adoption).to.deep.include({ verdict: "adopted", mismatches: [] });
    expect(r.adoption!.source).to.deep.equal({ path: file, sha256: sha(file), pinned: sha(file) });
    // The samples are the file's: taken when narwhal-check ran, none now.
    expect(Date.parse(r.ranAt)).to.be.closeTo(doc.captured_at_unix * 1000, 1);
    expect(Date.parse(r.ranAt)).to.be.below(t0);
    expect(r.wallSeconds).to.equal(0);
    expect(r.samples).to.equal(200);
    expect(r.failedAttempts).to.equal(0);
    expect(r.floorS).to.be.closeTo(doc.candidate_deadline_s, 1e-9);
    expect(r.deadlineS).to.be.above(r.floorS);
    expect(r.deadlineS).to.be.at.most(r.floorS + 0.1 + 1e-9);
    expect(r.sampledUnderBoundS).to.equal(10);
    expect(r.groups.map((g) => `${g.producer}>${g.consumer}@${g.inputTokens}:${g.samples}`)).to.deep.equal(LENGTHS.map((n) => `e0>e1@${n}:100`));
    expect(r.identities.map((i) => [i.iid, i.processStart])).to.deep.equal([
      ["e0", doc.process_starts.e0],
      ["e1", doc.process_starts.e1],
    ]);

    const text = fs.readFileSync(evidenceFile(r.evidence!.relativePath), "utf8");
    const record = JSON.parse(text);
    expect(record.kind).to.equal("calibration");
    expect(record.verdict.status).to.equal("pass");
    // The file's own lengths and sample count, which may differ from the configured ones it stands in for.
    expect(record.observations.adopted).to.deep.include({ path: file, sha256: sha(file), capturedAt: r.ranAt, inputLengths: LENGTHS, samplesPerGroup: 100 });
    // Nothing was sampled now: no reservation to prove.
    expect(r).to.not.have.property("reservation");
    expect(record.observations).to.not.have.property("reservation");
    expect(Date.parse(record.startedAt)).to.be.at.least(t0);
    const kept = fs.readFileSync(evidenceFile(record.artifacts[0].relativePath));
    expect("sha256:" + createHash("sha256").update(kept).digest("hex")).to.equal(sha(file));
    for (const a of record.artifacts) expect(fs.readFileSync(evidenceFile(a.relativePath), "utf8")).to.not.include(API_KEY);
    expect(text).to.not.include(API_KEY);
  });

  it("refuses the file after an engine restarts, naming its process start and generation, and measures afresh", async () => {
    const old = engines[1];
    const started = JSON.parse(fs.readFileSync(file, "utf8")).process_starts.e1 as number;
    await old.stop();
    engines[1] = await startEngine({ model, args: ARGS, port: old.port, sidePort: old.sidePort, sim: SIM });
    const before = await Promise.all(engines.map(completedRequests));
    const t0 = Date.now();
    const r = await calibrateFleet(inputs());
    const after = await Promise.all(engines.map(completedRequests));

    expect(r.adoption!.verdict).to.equal("measured");
    expect(r.adoption!.mismatches.map((m) => [m.engine, m.field])).to.deep.equal([
      ["e1", "process_starts.e1"],
      ["e1", "generations.e1"],
    ]);
    expect(r.adoption!.mismatches[0].reason).to.match(new RegExp(`^e1 was sampled in the process started at ${started}, the live process started at \\d+(\\.\\d+)? \\(restarted since\\)$`));
    // A fresh run: 100 completed samples per path and length, taken now against the live processes.
    expect(r.samples).to.equal(200);
    expect(r.wallSeconds).to.be.above(0);
    expect(Date.parse(r.ranAt)).to.be.at.least(t0);
    expect(after[0] - before[0] + (after[1] - before[1])).to.be.at.least(400);
    expect(r.identities.find((i) => i.iid === "e1")!.processStart).to.not.equal(started);
    const record = JSON.parse(fs.readFileSync(evidenceFile(r.evidence!.relativePath), "utf8"));
    expect(record.verdict.status).to.equal("pass");
    expect(record.observations.notAdopted.mismatches.map((m: { field: string }) => m.field)).to.deep.equal(["process_starts.e1", "generations.e1"]);
    expect(record.observations.adopted).to.equal(undefined);
    // The fresh run's own requests are all the engines finished meanwhile.
    expect(r.reservation!.idle).to.equal(true);
    expect(r.reservation!.engines.map((w) => w.own)).to.deep.equal([after[0] - before[0], after[1] - before[1]]);
    expect(record.observations.reservation).to.deep.equal(r.reservation);
  });
});
