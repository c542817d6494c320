/**
 * First-token calibration against engine simulators on 127.0.0.1 at a fast time scale: 100 completed
 * samples per directed path and input length up to the longest admitted input, a proposed deadline
 * above every group, the evidence kept without the key, and the engines proved reserved by their own
 * counters (each finished exactly the calibration's requests); a client sending completions straight
 * to one engine meanwhile leaves that engine, and only it, not reserved, the samples still
 * kept and the deadline still proposed; a consumer slower than the observation bound
 * stops the run naming its paths with every failed attempt kept; an engine serving another context
 * than its plan is refused before any sample; a record altered on disk replaces, on refresh, the one
 * calibration that wrote it and no other. Every process is stopped.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { calibrateFleet, provider } from "../../dynamic-providers/calibration/provider";
import type { CalibrationInputs } from "../../dynamic-providers/calibration/schema";
import { EVIDENCE_ALTERED } from "../../dynamic-providers/integrity";
import { defaultInputLengths } from "../../lib/preflight/calibration-run";
import { completedRequests, KV_BOTH, makeModel, removeTemps, ROOT, startEngine, stopAll, type SimEngine } from "../unit/sim-engine/helpers";

const API_KEY = "sk-narwhal-calibration-51c9a0";
const CONTEXT = 2048;
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--max-model-len", String(CONTEXT), "--max-num-seqs", "8", "--kv-transfer-config", KV_BOTH];
const SIM = { timeScale: 0.01, startupDelayS: 0 };
const D = (c: string) => "sha256:" + c.repeat(64);

describe("providers: first-token calibration", function () {
  this.timeout(300_000);
  const byId = new Map<string, SimEngine>();
  let model: string;

  before(async () => {
    model = makeModel({ config: { max_position_embeddings: 32768 } });
    for (const iid of ["e0", "e1"]) byId.set(iid, await startEngine({ model, args: ARGS, sim: SIM }));
  });

  after(async () => {
    await stopAll();
    removeTemps();
  });

  function inputs(members: Array<{ iid: string; role: "prefill" | "decode"; pin?: boolean }>, over: Partial<CalibrationInputs> = {}): CalibrationInputs {
    const doc = {
      schema: "narwhal.fleet",
      schema_version: 2,
      model: "tiny",
      engines: members.map((m) => ({ iid: m.iid, url: byId.get(m.iid)!.url, role: m.role, pin: m.pin ?? false })),
      slo: { ttft_s: 10, tpot_s: 0.125 },
      serving: { request_timeout_s: 60, prefill_timeout_s: 30 },
      engine: { first_token_timeout_s: 2.5, health_timeout_s: 5, engine_api_key_env: "NARWHAL_ENGINE_API_KEY" },
    };
    return {
      stack: "provider-tests",
      fleetDocument: doc,
      model: "tiny",
      runtime: { kind: "native" },
      engines: members.map((m) => ({ engineId: m.iid, role: m.role, pin: m.pin ?? false, generationDigest: D("a"), attestationDigest: D("b"), transport: "tcp", maxModelLen: CONTEXT })),
      inputLengths: defaultInputLengths(CONTEXT),
      samplesPerGroup: 100,
      observationBoundS: 10,
      maxFailuresPerGroup: 5,
      routerOverheadS: 0.05,
      schedule: "concurrent",
      apiKey: API_KEY,
      ...over,
    };
  }

  const evidenceFile = (relativePath: string) => path.join(ROOT, "runs", "provider-tests", "evidence", relativePath);

  it("takes 100 samples per directed path and input length up to the longest admitted input and proposes a deadline above every group", async () => {
    const t0 = Date.now();
    const finishedBefore = await Promise.all(["e0", "e1"].map((iid) => completedRequests(byId.get(iid)!)));
    const r = await calibrateFleet(inputs([{ iid: "e0", role: "prefill" }, { iid: "e1", role: "decode" }]));
    const finishedAfter = await Promise.all(["e0", "e1"].map((iid) => completedRequests(byId.get(iid)!)));
    console.log(`      ${r.samples} samples in ${((Date.now() - t0) / 1000).toFixed(1)} s; floor ${r.floorS.toFixed(3)} s, deadline ${r.deadlineS} s, prefill ${r.prefillS.toFixed(3)} s`);
    expect(r.paths).to.deep.equal([
      { producer: "e0", consumer: "e1" },
      { producer: "e1", consumer: "e0" },
    ]);
    expect(r.groups.map((g) => `${g.producer}>${g.consumer}@${g.inputTokens}`).sort()).to.deep.equal(
      [128, 512, 1024, 2047].flatMap((n) => [`e0>e1@${n}`, `e1>e0@${n}`]).sort(),
    );
    for (const g of r.groups) {
      expect(g.samples).to.equal(100);
      expect(g.candidate).to.be.closeTo(Math.max(g.max, 1.2 * g.p99) + 0.5, 1e-9);
      expect(r.deadlineS).to.be.greaterThan(g.candidate);
      expect(g.max).to.be.lessThan(10);
    }
    expect(r.floorS).to.equal(Math.max(...r.groups.map((g) => g.candidate)));
    expect(r.deadlineS).to.be.at.most(r.floorS + 0.1 + 1e-9);
    expect(r.samples).to.equal(800);
    expect(r.failedAttempts).to.equal(0);
    expect(r.clientTtftS).to.be.closeTo(r.deadlineS + r.prefillS + 0.05, 1e-9);
    expect(r.fitsClientTtft).to.equal(r.clientTtftS <= 10);
    expect(r.currentDeadlineS).to.equal(2.5);
    expect(r.sampledUnderBoundS).to.equal(10);
    expect(r.identities.map((i) => [i.iid, i.maxModelLen, typeof i.processStart])).to.deep.equal([
      ["e0", CONTEXT, "number"],
      ["e1", CONTEXT, "number"],
    ]);
    // Each engine produced for 400 samples and consumed 400: 800 finished requests of the calibration's
    // own, all its counter gained, and nothing else.
    expect(r.reservation!.idle).to.equal(true);
    expect(r.reservation!.reasons).to.deep.equal([]);
    expect(r.reservation!.engines.map((w) => [w.engine, w.own, w.foreign, w.restarted, w.after.finished - w.before.finished, w.after.inFlight])).to.deep.equal([
      ["e0", 800, 0, false, 800, 0],
      ["e1", 800, 0, false, 800, 0],
    ]);
    expect(finishedAfter.map((n, k) => n - finishedBefore[k])).to.deep.equal([800, 800]);

    // Raw timings, the fleet document, identities and the probe code are kept; the key is in none of them.
    const recordText = fs.readFileSync(evidenceFile(r.evidence!.relativePath), "utf8");
    const record = JSON.parse(recordText);
    expect(record.kind).to.equal("calibration");
    expect(record.verdict.status).to.equal("pass");
    expect(record.observations.reservation).to.deep.equal(r.reservation);
    const artifacts = record.artifacts.map((a: { relativePath: string }) => fs.readFileSync(evidenceFile(a.relativePath), "utf8"));
    for (const text of [recordText, ...artifacts]) expect(text).to.not.include(API_KEY);
    const samples = JSON.parse(artifacts[0]);
    expect(samples).to.have.length(800);
    const longest = samples.filter((s: { inputTokens: number }) => s.inputTokens === CONTEXT - 1);
    expect(longest).to.have.length(200);
    // The producer counted exactly the tokens asked for: the prompt is sized in token ids.
    expect(new Set(longest.map((s: { promptTokens: number }) => s.promptTokens))).to.deep.equal(new Set([CONTEXT - 1]));
    expect(artifacts[3]).to.include("observation bound");
  });

  it("records an engine that served another client during the samples as not reserved, and only that one", async () => {
    // A client of its own sends completions straight to e1 from before the calibration until after it.
    const e1 = byId.get("e1")!;
    let stop = false;
    let answered = 0;
    let firstAnswer!: () => void;
    const started = new Promise<void>((resolve) => (firstAnswer = resolve));
    const client = (async () => {
      while (!stop) {
        const res = await fetch(`${e1.url}/v1/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "tiny", prompt: "a request from another client", max_tokens: 4 }),
        });
        await res.text();
        if (res.status === 200) answered++;
        firstAnswer();
      }
    })();
    await started;
    let r: Awaited<ReturnType<typeof calibrateFleet>>;
    try {
      r = await calibrateFleet(inputs([{ iid: "e0", role: "prefill" }, { iid: "e1", role: "decode" }], { inputLengths: [64] }));
    } finally {
      stop = true;
      await client;
    }
    console.log(`      the other client had ${answered} completions answered; e1 served ${r.reservation!.engines[1].foreign} besides the calibration`);

    expect(r.samples).to.equal(200);
    expect(r.reservation!.idle).to.equal(false);
    const [w0, w1] = r.reservation!.engines;
    expect([w0.engine, w0.own, w0.foreign]).to.deep.equal(["e0", 200, 0]);
    // e1's own requests are still exactly the calibration's; the rest of what it finished or held is the other client's.
    expect([w1.engine, w1.own, w1.restarted]).to.deep.equal(["e1", 200, false]);
    expect(w1.foreign).to.be.above(0);
    expect(w1.foreign).to.be.at.most(answered);
    expect(w1.foreign).to.equal(w1.after.finished - w1.before.finished - 200 + w1.after.inFlight);
    expect(r.reservation!.reasons).to.have.length(1);
    expect(r.reservation!.reasons[0]).to.match(new RegExp(`^engine e1 served ${w1.foreign} requests? besides the probe's 200`));

    // The samples stand and the deadline is proposed; the record says the engines were not idle.
    const record = JSON.parse(fs.readFileSync(evidenceFile(r.evidence!.relativePath), "utf8"));
    expect(record.verdict.status).to.equal("pass");
    expect(record.observations.reservation).to.deep.equal(r.reservation);
  });

  it("replaces, on refresh, exactly the calibration whose record was altered on disk", async () => {
    const forward = inputs([{ iid: "e0", role: "prefill" }, { iid: "e1", role: "decode", pin: true }], { inputLengths: [64] });
    const backward = inputs([{ iid: "e1", role: "prefill" }, { iid: "e0", role: "decode", pin: true }], { inputLengths: [64] });
    const a = await provider.create(forward);
    const b = await provider.create(backward);
    const file = evidenceFile(a.outs.evidence.relativePath);
    fs.chmodSync(file, 0o600);
    fs.appendFileSync(file, " ");

    const readA = await provider.read!(a.id, a.outs);
    const readB = await provider.read!(b.id, b.outs);
    expect(readA.props.evidenceAltered).to.deep.equal([a.outs.evidence.relativePath]);
    expect(readB.props).to.not.have.property("evidenceAltered");
    expect(await provider.diff!(a.id, readA.props, forward)).to.deep.equal({ changes: true, replaces: [EVIDENCE_ALTERED], deleteBeforeReplace: false });
    expect(await provider.diff!(b.id, readB.props, backward)).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
  });

  it("stops when a consumer is slower than the observation bound, naming its paths and keeping every failed attempt", async () => {
    // e2's first token takes 200 s of model time (2 s at this scale), above a 0.5 s bound; e2 is a pinned decode engine, so it never produces.
    const slow = await startEngine({ model, args: ARGS, sim: { ...SIM, latency: { default: { decodeBase: 200 } } } });
    byId.set("e2", slow);
    const i = inputs(
      [
        { iid: "e0", role: "prefill" },
        { iid: "e1", role: "decode" },
        { iid: "e2", role: "decode", pin: true },
      ],
      { inputLengths: [64], observationBoundS: 0.5, maxFailuresPerGroup: 3 },
    );
    (i.fleetDocument.engine as Record<string, number>).first_token_timeout_s = 0.25;
    let message = "";
    await calibrateFleet(i).catch((err: Error) => (message = err.message));
    expect(message).to.include("diagnose the failed paths before selecting a serving deadline");
    expect(message).to.include("e0 -> e2 at 64 tokens: 0 of 100 samples completed, 3 attempts failed (last: observation_expired: no first token from e2 within the 0.5 s observation bound)");
    expect(message).to.include("e1 -> e2 at 64 tokens: 0 of 100 samples completed, 3 attempts failed");
    expect(message).to.not.match(/e2 -> /);
    const recordPath = /kept as (\S+)\)$/.exec(message)![1];
    const record = JSON.parse(fs.readFileSync(evidenceFile(recordPath), "utf8"));
    expect(record.verdict.status).to.equal("fail");
    expect(record.observations.failures).to.have.length(6);
    // The failed run keeps its reservation: e2 finished none of the abandoned decodes, and nothing else.
    expect(record.observations.reservation.idle).to.equal(true);
    expect(record.observations.reservation.engines.map((w: { engine: string; own: number; foreign: number }) => [w.engine, w.own, w.foreign])).to.deep.include(["e2", 0, 0]);
    const samples = JSON.parse(fs.readFileSync(evidenceFile(record.artifacts[0].relativePath), "utf8")) as Array<{ consumer: string; status: string; failure?: string }>;
    expect(samples.filter((s) => s.status === "failed").map((s) => `${s.consumer}:${s.failure}`)).to.deep.equal(Array(6).fill("e2:observation_expired"));
    await slow.stop();
  });

  it("refuses an engine that serves another context than its launch plan before taking any sample", async () => {
    const i = inputs([{ iid: "e0", role: "prefill" }, { iid: "e1", role: "decode" }], { inputLengths: [64] });
    i.engines[1].maxModelLen = 4096;
    let message = "";
    await calibrateFleet(i).catch((err: Error) => (message = err.message));
    expect(message).to.match(/^calibration: e1 serves a context of 2048 tokens, its launch plan 4096 \(every sample and failure kept as \S+\)$/);
    const record = JSON.parse(fs.readFileSync(evidenceFile(/kept as (\S+)\)$/.exec(message)![1]), "utf8"));
    expect(JSON.parse(fs.readFileSync(evidenceFile(record.artifacts[0].relativePath), "utf8"))).to.deep.equal([]);
    // Nothing was sampled, so there is no window to have been reserved for.
    expect(record.observations).to.not.have.property("reservation");
  });
});
