/**
 * Adoption of a runbook's profile store by the Profile provider, against two engine simulators on
 * 127.0.0.1: a store the pinned `narwhal-profile` measured on them is adopted engine by engine with no
 * completion sent (the engines' own request counters prove it), the store the program republishes from
 * the adopted rows loads in narwhal's loader, and an engine restarted since is measured afresh.
 */
import { expect } from "chai";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Sweep } from "../../lib/profiling/sweep";
import type { EngineGenerationOutputs } from "../../dynamic-providers/engine-generation/schema";
import { provider as profileProvider } from "../../dynamic-providers/profile/provider";
import { writeStore } from "../../dynamic-providers/profile-store/provider";
import type { ProfileInputs, ProfileOutputs } from "../../dynamic-providers/profile/schema";
import { KV_BOTH, makeModel, removeTemps, ROOT, startEngine, stopAll, tempDir, completedRequests, type SimEngine } from "../unit/sim-engine/helpers";
import { profileInputs, provedEngine } from "./support/profiled-engine";

const STACK = "provider-tests";
const API_KEY = "sk-narwhal-adopt-7d2b4e";
const VENV = path.join(ROOT, ".tools", "venv", "bin");
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--max-model-len", "4096", "--max-num-seqs", "8", "--no-enable-prefix-caching", "--kv-transfer-config", KV_BOTH];
const SWEEP: Sweep = { prefillLens: [256, 512, 1024, 2048], decodeInputLens: [256, 1024], decodeConcurrency: [1, 4, 8], decodeTokens: 64, prefillRepeats: 3, decodeRepeats: 1 };
const sha = (file: string) => "sha256:" + createHash("sha256").update(fs.readFileSync(file)).digest("hex");


describe("providers: Profile adopts a runbook's profile store", function () {
  this.timeout(300_000);
  let model: string;
  let dir: string;
  const engines: SimEngine[] = [];
  const generations: EngineGenerationOutputs[] = [];

  const prove = (id: string, engine: SimEngine) => provedEngine(id, engine, { apiKey: API_KEY, planSha256: "sha256:" + "c3".repeat(32) });

  const inputsFor = (id: string, g: EngineGenerationOutputs): ProfileInputs =>
    profileInputs(id, g, { apiKey: API_KEY, sweep: SWEEP, stack: STACK }, {
      adopt: { storePath: path.join(dir, "runs", "profiles.json"), storeSha256: sha(path.join(dir, "runs", "profiles.json")), samplesPath: path.join(dir, "runs", "profiles.samples.json"), samplesSha256: sha(path.join(dir, "runs", "profiles.samples.json")) },
    });

  before(async () => {
    model = makeModel({});
    dir = tempDir("runbook-");
    for (let i = 0; i < 2; i++) engines.push(await startEngine({ model, args: ARGS, sim: { timeScale: 0.5, startupDelayS: 0 } }));
    // The runbook's Gate F: narwhal-profile over the fleet document (no engine contract, so rows bind each engine's identity generation).
    const fleet = {
      schema: "narwhal.fleet",
      schema_version: 2,
      model: "tiny",
      engines: engines.map((e, i) => ({ iid: `e${i}`, url: e.url, role: i === 0 ? "prefill" : "decode" })),
      slo: { ttft_s: 10, tpot_s: 0.125 },
      engine: { engine_api_key_env: "NARWHAL_ENGINE_API_KEY" },
      profiles: { path: path.join(dir, "runs", "profiles.json") },
    };
    fs.writeFileSync(path.join(dir, "fleet.json"), JSON.stringify(fleet));
    const run = spawnSync(
      path.join(VENV, "narwhal-profile"),
      ["--fleet", path.join(dir, "fleet.json"), "--prefill-lens", SWEEP.prefillLens.join(","), "--decode-input-lens", SWEEP.decodeInputLens.join(","), "--decode-concurrency", SWEEP.decodeConcurrency.join(","), "--decode-tokens", String(SWEEP.decodeTokens), "--prefill-repeats", "3"],
      { env: { ...process.env, NARWHAL_ENGINE_API_KEY: API_KEY }, encoding: "utf8", timeout: 240_000 },
    );
    expect(run.status, run.stderr).to.equal(0);
    for (const [i, e] of engines.entries()) generations.push(await prove(`e${i}`, e));
  });

  after(async () => {
    await stopAll();
    removeTemps();
  });

  it("adopts each engine's row without sending a completion, recording where it came from", async () => {
    const before = await Promise.all(engines.map(completedRequests));
    expect(before.every((n) => n > 0), "narwhal-profile measured the engines").to.equal(true);
    const outs = await Promise.all(generations.map(async (g, i) => (await profileProvider.create(inputsFor(`e${i}`, g))).outs as ProfileOutputs));
    expect(await Promise.all(engines.map(completedRequests))).to.deep.equal(before);

    const store = JSON.parse(fs.readFileSync(path.join(dir, "runs", "profiles.json"), "utf8"));
    for (const [i, p] of outs.entries()) {
      expect(p.adoption?.verdict).to.equal("adopted");
      expect(p.adoption?.source?.storeSha256).to.equal(sha(path.join(dir, "runs", "profiles.json")));
      const row = store.profiles.find((r: { iid: string }) => r.iid === `e${i}`);
      // narwhal's null fields are dropped; every measured value is the runbook's, bound to this generation.
      expect(p.row).to.deep.equal(Object.fromEntries(Object.entries(row).filter(([, v]) => v !== null)));
      expect(p.row.generation_digest).to.equal(p.bindingDigest);
      expect(p.wallSeconds).to.equal(0);
      expect(p.maxModelLen).to.equal(4096);
      expect(p.effectiveSweep.prefillLens).to.deep.equal(SWEEP.prefillLens);
      const record = JSON.parse(fs.readFileSync(path.join(ROOT, "runs", STACK, "evidence", p.evidence!.relativePath), "utf8"));
      expect(record.verdict.status).to.equal("pass");
      expect(record.observations.adopted.storePath).to.equal(path.join(dir, "runs", "profiles.json"));
      expect(record.observations.adopted.samplesSha256).to.equal(sha(path.join(dir, "runs", "profiles.samples.json")));
      expect(Date.parse(record.startedAt)).to.be.above(Date.parse(p.measuredAt));
    }

    // The program's own store, republished from the adopted rows, is one narwhal's loader accepts.
    const out = await writeStore({ stack: STACK, path: path.join(dir, "republished", "profiles.json"), engineIds: ["e0", "e1"], model: "tiny", sweep: { prefill_lens: SWEEP.prefillLens }, profiles: outs.map((p) => ({ engineId: p.engineId, row: p.row, profileDigest: p.profileDigest, samples: p.samples })) });
    const loaded = execFileSync(path.join(VENV, "python"), ["-c", "import sys; from pathlib import Path; from narwhal.profiling.store import ProfileStore; s = ProfileStore(Path(sys.argv[1])); print(s.get('e1').generation_digest)", out.path], { encoding: "utf8" });
    expect(loaded.trim()).to.equal(outs[1].bindingDigest);
  });

  it("measures afresh an engine restarted since the store was written, and says why", async () => {
    const port = engines[1].port;
    await engines[1].stop();
    engines[1] = await startEngine({ model, args: ARGS, port, sim: { timeScale: 0.5, startupDelayS: 0 } });
    const g = await prove("e1", engines[1]);
    expect(g.processStartTime).to.not.equal(generations[1].processStartTime);
    const before = await completedRequests(engines[1]);
    const p = (await profileProvider.create(inputsFor("e1", g))).outs as ProfileOutputs;
    expect(p.adoption?.verdict).to.equal("measured");
    expect(p.adoption?.reason).to.match(/^its row binds generation sha256:[0-9a-f]{64}, the live engine binds sha256:[0-9a-f]{64} \(restarted or relaunched since it was measured\)$/);
    expect(p.row.generation_digest).to.equal(p.bindingDigest);
    expect(p.wallSeconds).to.be.above(0);
    expect((await completedRequests(engines[1])) - before).to.be.above(10);
  });
});
