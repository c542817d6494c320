/**
 * Gate C's EngineGeneration provider, and what CacheCapture decides before it reads anything on a host,
 * against real engine simulator processes on 127.0.0.1: the provider objects' methods are called directly
 * (as the dynamic provider host calls them), plus one round trip through the serialised shim. Every
 * simulator started here is stopped. The capture itself (the engine's log over SSH) is proved on
 * simulated hosts in cache-capture.test.ts.
 */
import { expect } from "chai";
import { homedir, tmpdir } from "node:os";
import { provider as captureProvider } from "../../dynamic-providers/cache-capture/provider";
import { CacheCapture } from "../../dynamic-providers/cache-capture/resource";
import type { CacheCaptureInputs, CacheCaptureOutputs } from "../../dynamic-providers/cache-capture/schema";
import { provider as generationProvider } from "../../dynamic-providers/engine-generation/provider";
import { EngineGeneration } from "../../dynamic-providers/engine-generation/resource";
import type { EngineGenerationInputs, EngineGenerationOutputs } from "../../dynamic-providers/engine-generation/schema";
import { sha256Json } from "../../lib/digest";
import { evidenceRoot } from "../../lib/evidence/store";
import { UNKNOWN } from "../../lib/unknown";
import * as fs from "node:fs";
import * as path from "node:path";
import { keptAttempt } from "../support/kept-attempt";
import { freePort, http, KV_BOTH, makeModel, removeTemps, ROOT, spawnEngine, startEngine, stopAll, type SimEngine } from "../unit/sim-engine/helpers";

const API_KEY = "sk-narwhal-test-7c1f9e";
const PLAN = "sha256:" + "5a".repeat(32);
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--tensor-parallel-size", "2", "--block-size", "16", "--kv-transfer-config", KV_BOTH, "--enforce-eager", "--max-model-len", "4096"];

function generationInputs(engine: SimEngine, over: Partial<EngineGenerationInputs> = {}): EngineGenerationInputs {
  return {
    engineId: "e1",
    hostAlias: "local",
    url: engine.url,
    planSha256: PLAN,
    expectedVersion: "0.29.0",
    servedName: "tiny",
    apiKey: API_KEY,
    processIdentity: { hostAlias: "local", pid: engine.proc.pid! },
    probeTimeoutS: 10,
    ...over,
  };
}

/** Capture inputs whose login leads nowhere: every case here is decided before the capture logs in. */
function captureInputs(g: EngineGenerationOutputs, over: Partial<CacheCaptureInputs> = {}): CacheCaptureInputs {
  return {
    engineId: g.engineId,
    hostAlias: g.hostAlias,
    url: g.url,
    generationDigest: g.generationDigest,
    planSha256: g.planSha256,
    processIdentity: g.processIdentity,
    expected: { blockSize: 16, tensorParallelSize: 2, dtype: "bfloat16", kvCacheDtype: "auto" },
    apiKey: API_KEY,
    login: { host: "192.0.2.1", port: 22, user: "root", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJdD7y3aLq454yWBdwLWbieU1ebz9/cu7/QEXn9OIeZJ", connectTimeoutS: 1 },
    engineLog: { kind: "files", paths: ["/srv/runs/e1/engine.log"] },
    modelDir: "/models/tiny",
    ...over,
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

describe("Gate C providers against the engine simulator", function () {
  this.timeout(60_000);
  let model: string;
  let engine: SimEngine;
  let proved: EngineGenerationOutputs;

  before(async () => {
    model = makeModel();
    engine = await startEngine({ model, args: ARGS });
  });

  after(async () => {
    await stopAll();
    removeTemps();
  });

  it("create proves the live engine and binds the proof to its process", async () => {
    const inputs = generationInputs(engine);
    const { id, outs } = await generationProvider.create(inputs);
    proved = outs as EngineGenerationOutputs;
    const truth = (await http(`${engine.controlUrl}/truth`)).json;
    expect(truth.pid).to.equal(engine.proc.pid);
    expect(proved).to.deep.include({ ...inputs, processStartTime: truth.process_start_time_seconds, version: "0.29.0" });
    expect(proved.generationDigest).to.equal(
      sha256Json({ processStartTime: truth.process_start_time_seconds, pid: engine.proc.pid, version: "0.29.0", planSha256: PLAN }),
    );
    expect(id).to.equal(`e1-${proved.generationDigest.slice(7, 19)}`);
    expect(proved.completionText).to.be.a("string").and.not.equal("");
    expect(Date.parse(proved.provedAt)).to.be.closeTo(Date.now(), 30_000);
    expect(proved).to.not.have.property("observedGeneration");
  });

  it("records what the proof sent, by alias with its statuses, and keeps the engine's answers it was judged on", async () => {
    const stack = "provider-generation-evidence";
    const { outs } = await generationProvider.create(generationInputs(engine, { stack }));
    const root = evidenceRoot(process.cwd(), stack);
    const record = JSON.parse(fs.readFileSync(path.join(root, (outs as EngineGenerationOutputs).evidence!.relativePath), "utf8"));
    const http = (record.commands as Array<{ host: string; exitStatus: number; http?: { method: string; target: string; path: string; requests: number } }>).filter((c) => c.http);
    expect(http.map((c) => `${c.http!.method} ${c.http!.target} ${c.http!.path}`)).to.include.members(["GET engine e1 /version", "GET engine e1 /metrics"]);
    for (const c of http) expect(c).to.deep.include({ host: "local", exitStatus: 0 });
    const metrics = (record.artifacts as Array<{ name: string; relativePath: string }>).find((a) => a.name === "engine e1: GET /metrics -> 200");
    expect(metrics, JSON.stringify(record.artifacts.map((a: { name: string }) => a.name))).to.not.equal(undefined);
    expect(fs.readFileSync(path.join(root, metrics!.relativePath), "utf8")).to.match(/^process_start_time_seconds /m);
    expect(JSON.stringify(record)).to.not.contain(API_KEY);
  });

  it("is deterministic: a second proof of the same process gives the same digest and text", async () => {
    const { outs } = await generationProvider.create(generationInputs(engine));
    expect(outs.generationDigest).to.equal(proved.generationDigest);
    expect(outs.completionText).to.equal(proved.completionText);
  });

  it("diff: nothing changed, only the API key (update), or what the proof was taken against (replace)", async () => {
    const inputs = generationInputs(engine);
    expect(await generationProvider.diff!("id", proved, inputs)).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
    expect(await generationProvider.diff!("id", proved, { ...inputs, apiKey: "rotated" })).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
    const moved = { ...inputs, planSha256: "sha256:" + "00".repeat(32), expectedVersion: "0.29.1", processIdentity: { hostAlias: "local", containerId: "0123456789ab" } };
    expect((await generationProvider.diff!("id", proved, moved)).replaces).to.deep.equal(["planSha256", "expectedVersion", "processIdentity"]);
    const updated = await generationProvider.update!("id", proved, { ...inputs, apiKey: "rotated" });
    expect(updated.outs).to.deep.equal({ ...proved, apiKey: "rotated" });
  });

  it("read while the proved process serves: observedGeneration equals generationDigest, no diff", async () => {
    const { id, props } = await generationProvider.read!("e1-x", proved);
    expect(id).to.equal("e1-x");
    expect(props).to.deep.equal({
      ...proved,
      observedGeneration: proved.generationDigest,
      observedState: "proved",
      observedDetail: `the proved process serves (process_start_time_seconds ${proved.processStartTime})`,
    });
    expect((await generationProvider.diff!("id", props as EngineGenerationOutputs, generationInputs(engine))).changes).to.equal(false);
  });

  it("capture: check fills in nothing, and an engine whose live process is not the proved one is refused before any login", async () => {
    const inputs = captureInputs(proved);
    const checked = await captureProvider.check!({}, inputs);
    expect(checked).to.deep.equal({ inputs });
    const err = await rejection(captureProvider.create(captureInputs(proved, { generationDigest: "sha256:" + "0".repeat(64) })));
    expect(err.code).to.equal("NARWHAL_ENGINE_RESTARTED");
    expect(err.message).to.contain("nothing was captured");
  });

  it("refuses a wrong API key without repeating it", async () => {
    const err = await rejection(generationProvider.create(generationInputs(engine, { apiKey: "sk-wrong-key-1234" })));
    expect(err.code).to.equal("NARWHAL_ENGINE_UNAUTHORIZED");
    expect(err.message).to.contain(`GET ${engine.url}/v1/models answered 401 Unauthorized`).and.not.contain("sk-wrong-key-1234");
  });

  it("serialises the resources' provider shims without a secret or an absolute path, and the rebuilt shim works", async () => {
    const { serializeFunction } = require("@pulumi/pulumi").runtime;
    const requireFromString = require("require-from-string");
    for (const [shim, implementation] of [
      [EngineGeneration.provider, "dynamic-providers/engine-generation/provider.ts"],
      [CacheCapture.provider, "dynamic-providers/cache-capture/provider.ts"],
    ] as const) {
      const { text } = await serializeFunction(() => shim);
      // One shim for every type, a reference to the installed package: the resource, not the shim, names its module.
      expect(text).to.contain('require("narwhal-fleet-provider-shim').and.not.contain(implementation);
      for (const forbidden of [API_KEY, ROOT, process.cwd(), tmpdir(), homedir()]) expect(text).to.not.contain(forbidden);
      expect(text).to.not.match(/"\/[a-z]/); // no string literal that starts an absolute path
    }
    // The dynamic provider host rebuilds the provider this way; the shim loads the implementation from the cwd.
    expect(process.cwd()).to.equal(ROOT);
    const generationShim = EngineGeneration.provider;
    const rebuilt = requireFromString((await serializeFunction(() => generationShim)).text).handler();
    const named = { __implementation: "dynamic-providers/engine-generation/provider.ts" };
    const { outs } = await rebuilt.create({ ...generationInputs(engine), ...named });
    expect(outs.generationDigest).to.equal(proved.generationDigest);
    // The name stays with the outputs, where refresh and delete find it.
    expect(outs.__implementation).to.equal(named.__implementation);
    const diff = await rebuilt.diff("id", { ...proved, ...named }, { ...generationInputs(engine, { apiKey: "rotated" }), ...named });
    expect(diff).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
  });

  it("after a restart on the same port: read sees another generation, diff replaces, capture refuses", async () => {
    const port = engine.port;
    const sidePort = engine.sidePort;
    await engine.stop();

    const down = (await generationProvider.read!("id", proved)).props as EngineGenerationOutputs;
    expect(down).to.include({ observedGeneration: "none", observedState: "unreachable", observedDetail: "/health: connection refused (ECONNREFUSED)" });

    engine = await spawnEngine({ model, args: ARGS, port, sidePort });
    await engine.ready();
    const { props } = await generationProvider.read!("id", proved);
    const seen = props as EngineGenerationOutputs;
    expect(seen.observedState).to.equal("restarted");
    expect(seen.observedGeneration).to.match(/^sha256:[0-9a-f]{64}$/).and.not.equal(proved.generationDigest);
    // The capture is never overwritten by a refresh.
    for (const k of ["generationDigest", "processStartTime", "version", "provedAt", "completionText"] as const) expect(seen[k]).to.deep.equal(proved[k]);

    // Same inputs as before: only the live generation moved, and the replace key says so.
    const sameInputs = generationInputs(engine, { processIdentity: proved.processIdentity });
    expect(await generationProvider.diff!("id", seen, sameInputs)).to.deep.equal({ changes: true, replaces: ["generation"], deleteBeforeReplace: false });

    const refused = await rejection(captureProvider.create(captureInputs(proved)));
    expect(refused.code).to.equal("NARWHAL_ENGINE_RESTARTED");
    expect(refused.message).to.contain("engine e1 on host local: the engine restarted since it was proved").and.contain(`the proved one ${proved.generationDigest}; nothing was captured`);

    // The replacement proof of the new process; the capture then replaces because its generation did.
    const reproved = (await generationProvider.create(generationInputs(engine))).outs as EngineGenerationOutputs;
    expect(reproved.generationDigest).to.not.equal(proved.generationDigest);
    const captured = { ...captureInputs(proved), layout: {} as CacheCaptureOutputs["layout"], cacheLayoutDigest: "sha256:" + "c".repeat(64), capturedAt: proved.provedAt, sources: {} as CacheCaptureOutputs["sources"] };
    expect((await captureProvider.diff!("id", captured, captureInputs(reproved))).replaces).to.deep.equal(["generationDigest", "processIdentity"]);
    // How the host is reached, where the log is and the model dir only update the capture.
    const moved = captureInputs(proved, { engineLog: { kind: "files", paths: ["/srv/elsewhere/engine.log"] }, modelDir: "/models/other", login: { ...captureInputs(proved).login, port: 2222 } });
    expect(await captureProvider.diff!("id", captured, moved)).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
  });

  it("refuses an engine that reports another version and names who owns the endpoint", async () => {
    const old = await startEngine({ model: makeModel(), args: ["--served-model-name", "tiny"], sim: { version: "0.28.0" } });
    try {
      const err = await rejection(generationProvider.create(generationInputs(old, { engineId: "e2", apiKey: undefined })));
      expect(err.code).to.equal("NARWHAL_ENGINE_VERSION");
      expect(err.message).to.equal(
        `engine e2 on host local: /version at ${old.url} returned "0.28.0"; the checked image expects "0.29.0". ` +
          `The endpoint is recorded as owned by pid ${old.proc.pid} on host local: check which process or container owns the port ` +
          "(ss -ltnp, docker ps) and compare it with the recorded image and container ID; after the repair the proof is taken anew.",
      );
    } finally {
      await old.stop();
    }
  });

  it("keeps a failed proof as a fail record with every answer it got, before the error is seen", async () => {
    const old = await startEngine({ model: makeModel(), args: ["--served-model-name", "tiny"], sim: { version: "0.28.0" } });
    try {
      const err = await rejection(generationProvider.create(generationInputs(old, { engineId: "e2", apiKey: undefined, stack: "provider-tests" })));
      expect(err.code).to.equal("NARWHAL_ENGINE_VERSION");
      const { record, artifacts } = keptAttempt(err.message, "provider-tests");
      expect(record).to.deep.include({ kind: "generation", subject: { kind: "engine", alias: "e2" } });
      expect(record.verdict.status).to.equal("fail");
      expect(record.verdict.reasons[0]).to.contain(`/version at ${old.url} returned "0.28.0"; the checked image expects "0.29.0"`);
      expect(record.observations.error.code).to.equal("NARWHAL_ENGINE_VERSION");
      expect(record.inputs).to.include({ engineId: "e2", planSha256: PLAN, expectedVersion: "0.29.0" });
      expect(artifacts["GET /health"]).to.match(/^HTTP 200\n/);
      expect(artifacts["GET /version"]).to.match(/^HTTP 200\n/).and.contain("0.28.0");
    } finally {
      await old.stop();
    }
  });

  it("gives up on an endpoint where nothing listens within the bounded wait", async () => {
    const port = await freePort();
    const started = Date.now();
    const err = await rejection(
      generationProvider.create(
        generationInputs(engine, { engineId: "e3", url: `http://127.0.0.1:${port}`, probeTimeoutS: 1.5, processIdentity: { hostAlias: "local", pid: 999999 } }),
      ),
    );
    const took = Date.now() - started;
    expect(err.code).to.equal("NARWHAL_ENGINE_NOT_HEALTHY");
    expect(err.message).to.equal(
      `engine e3 on host local: /health at http://127.0.0.1:${port} did not answer 200 within 1.5 s (last: connection refused (ECONNREFUSED)); ` +
        "no proof was taken. Check that the engine runs (pid 999999 on host local) and read its log for the cause.",
    );
    expect(took).to.be.within(1000, 3000);
  });

  it("gives up on a dead engine (503) within the bounded wait, and a refresh sees it dead", async () => {
    const dead = await http(`${engine.controlUrl}/dead`, { body: { dead: true } });
    expect(dead.status).to.equal(200);
    try {
      const started = Date.now();
      const err = await rejection(generationProvider.create(generationInputs(engine, { probeTimeoutS: 1 })));
      expect(Date.now() - started).to.be.within(700, 2500);
      expect(err.code).to.equal("NARWHAL_ENGINE_NOT_HEALTHY");
      expect(err.message).to.contain(`engine e1 on host local: /health at ${engine.url} did not answer 200 within 1 s (last: HTTP 503 (the engine is dead))`);
      const { props } = await generationProvider.read!("id", proved);
      expect(props).to.include({ observedGeneration: "none", observedState: "dead", observedDetail: "/health answered HTTP 503" });
    } finally {
      await http(`${engine.controlUrl}/dead`, { body: { dead: false } });
    }
  });

  it("check reports bad inputs per property and lets unknown preview values through", async () => {
    const { failures } = await generationProvider.check!({}, { ...generationInputs(engine), url: "127.0.0.1:8100", probeTimeoutS: 0, processIdentity: { hostAlias: "local" } });
    expect(failures).to.deep.equal([
      { property: "url", reason: 'url must be the engine\'s http(s) base URL, got "127.0.0.1:8100"' },
      { property: "processIdentity", reason: "exactly one of pid or containerId must be set" },
      { property: "probeTimeoutS", reason: "probeTimeoutS must be a positive number of seconds, got 0" },
    ]);
    const unknown = UNKNOWN;
    const preview = await generationProvider.check!({}, { ...generationInputs(engine), url: unknown, processIdentity: { hostAlias: "local", pid: unknown } });
    expect(preview.failures).to.equal(undefined);
    const capture = await captureProvider.check!({}, {
      ...captureInputs(proved),
      processIdentity: { hostAlias: "local", containerId: "web-1" },
      expected: { blockSize: 0, tensorParallelSize: 2, dtype: "", kvCacheDtype: "auto" },
      login: { port: 22 },
      engineLog: { kind: "docker-logs" },
      modelDir: "models/tiny",
      probeTimeoutS: -1,
    });
    expect(capture.failures).to.deep.equal([
      { property: "processIdentity", reason: 'containerId must be a Docker container id (12-64 lowercase hex digits), got "web-1"' },
      { property: "expected", reason: "expected.blockSize must be a positive integer, got 0" },
      { property: "expected", reason: 'expected.dtype must be a non-empty string, got ""' },
      { property: "login", reason: "login.host must be the host's address" },
      { property: "login", reason: "login.hostKey must be the host key discovery verified" },
      { property: "engineLog", reason: 'engineLog.kind must be "files" or "container", got "docker-logs"' },
      { property: "modelDir", reason: 'modelDir must be an absolute path, got "models/tiny"' },
      { property: "probeTimeoutS", reason: "probeTimeoutS must be a positive number of seconds, got -1" },
    ]);
    const mismatched = await captureProvider.check!({}, { ...captureInputs(proved), engineLog: { kind: "container", dockerCommand: "docker" } });
    expect(mismatched.failures).to.deep.equal([{ property: "engineLog", reason: "engineLog is a container's log, but processIdentity names no container" }]);
    const relative = await captureProvider.check!({}, { ...captureInputs(proved), engineLog: { kind: "files", paths: ["/srv/runs/e1/engine.log", "startup.log"] } });
    expect(relative.failures).to.deep.equal([{ property: "engineLog", reason: 'engineLog.paths must list the log files\' absolute paths on the host, got ["/srv/runs/e1/engine.log","startup.log"]' }]);
    const previewed = await captureProvider.check!({}, { ...captureInputs(proved), engineLog: UNKNOWN as never, login: UNKNOWN as never });
    expect(previewed.failures).to.equal(undefined);
  });
});
