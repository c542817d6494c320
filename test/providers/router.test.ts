/**
 * Gates B and G against real processes on 127.0.0.1: narwhal-inference installed by this program's
 * install script into a fresh venv (from a wheelhouse, as a host without a route to the package index
 * does), the real narwhal-serve started by the router scripts over two engine simulators with a fleet
 * document this program generates, one completion through it, and Debian's Prometheus scraping the
 * router, both engines and the evidence freshness exporter from the generated config, its stale-evidence
 * alert firing and clearing. Every process started here is stopped.
 */
import { expect } from "chai";
import { localPrometheus } from "../support/local-prometheus";
import { execFile, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { createServer, type Server } from "node:net";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { parseFleetConfig } from "../../lib/config/parse";
import { ENGINE_API_KEY_ENV, fleetDocument } from "../../lib/fleet/fleet-document";
import { installScript, uninstallScript, type InstallMarker, type InstallOptions } from "../../lib/router/install";
import { FRONT_HOLD_SH, frontDir, frontStartScript, frontStopScript, type FrontOptions } from "../../lib/router/front";
import { PID_FILE_SH } from "../../lib/pid-file";
import { FRONT_STATUS_PATH } from "../../lib/router/front-py";
import { routerIdentity, routerStartScript, routerStopScript, routerSwapScript, textDigest, type RouterOptions, type RouterStarted } from "../../lib/router/serve";
import { judgeRouterProof, proofScript, type RouterProof } from "../../lib/router/proof";
import { controllerCheckScript, documentEngines, engineAddressOf, enginePortOf } from "../../lib/router/controller-check";
import { journalBeside } from "../../components/router/router";
import { engineTargets, routerTargets } from "../../lib/observability/targets";
import { freshnessStartScript, freshnessStopScript, prometheusStartScript, prometheusStopScript, writeFilesScript, type PrometheusRunOptions } from "../../lib/observability/scripts";
import { PANELS } from "../../lib/observability/grafana";
import { prometheusConfig } from "../../lib/observability/prometheus";
import { rulesFile } from "../../lib/observability/rules";
import type { FreshnessExpectation, FreshnessRunOptions } from "../../lib/observability/freshness-exporter";
import { exposedMetrics, metricNames } from "../support/metrics";
import { envFile, shq } from "../../lib/shell";
import { parseKeptAttempts } from "../../lib/runtime/attempts";
import { provider as commandRecordProvider } from "../../dynamic-providers/command-record/provider";
import { evidenceRoot } from "../../lib/evidence/store";
import { freePort, http, KV_BOTH, makeModel, removeTemps, ROOT, startEngine, stopAll, tempDir, type SimEngine } from "../unit/sim-engine/helpers";
import { pidAlive } from "../../sim/hosts/exec";
import { fetchGet } from "../../lib/trial/http";
import { runTrial, type HostProbes, type TrialOptions, type TrialRoutes } from "../../lib/trial/run";
import type { ProfileRow } from "../../lib/profiling/store";
import { trustStoreVariables } from "../support/trust-store-env";
import { shAsync } from "../support/sh-async";

const run = promisify(execFile);
const API_KEY = "sk-narwhal-router-5c1e9b";
const VERSION = "0.7.0";
const PIP = path.join(ROOT, ".tools", "venv", "bin", "pip");
const PYTHON = path.join(ROOT, ".tools", "venv", "bin", "python");
const WHEELHOUSE = path.join(tmpdir(), `narwhal-fleet-wheelhouse-${VERSION}`);
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--block-size", "16", "--kv-transfer-config", KV_BOTH, "--max-model-len", "4096"];

async function sh(script: string, input = "", env: NodeJS.ProcessEnv = process.env, shell = "sh"): Promise<{ code: number; stdout: string; stderr: string }> {
  const r = spawnSync(shell, ["-c", script], { input, env, encoding: "utf8", timeout: 300_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Two clients sending completions one after another to `base` (plain and streamed in turn) until `stop`:
 * each request's HTTP status, or the client's error when none came.
 */
function clientsThrough(base: string) {
  const outcomes: Array<number | string> = [];
  let running = true;
  const client = async (stream: boolean) => {
    while (running) {
      const outcome = await fetch(`${base}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "tiny", prompt: "A narwhal is", max_tokens: 4, temperature: 0, stream }),
        signal: AbortSignal.timeout(60_000),
      }).then(
        async (res) => {
          const text = await res.text();
          // A streamed answer ends with its [DONE] event: the front passed every event through.
          return res.status === 200 && stream && !text.includes("data: [DONE]") ? "stream cut short" : res.status;
        },
        (e: Error) => e.message,
      );
      outcomes.push(outcome);
    }
  };
  const loops = [client(false), client(true)];
  return {
    /** Waits (30 s, named) until one request was served: the clients are running. */
    async servedOne(): Promise<void> {
      const deadline = Date.now() + 30_000;
      while (!outcomes.includes(200)) {
        if (Date.now() > deadline) throw new Error(`clients: nothing served through ${base} within 30 s: ${JSON.stringify(outcomes.slice(-5))}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop(): Promise<Array<number | string>> {
      running = false;
      await Promise.all(loops);
      return outcomes;
    },
  };
}

const lastJson = <T>(out: string): T => JSON.parse(out.trim().split("\n").pop()!) as T;

/** The pinned wheels, fetched once per machine: the install itself then runs offline with --no-index. */
async function wheelhouse(): Promise<string> {
  if (!fs.existsSync(path.join(WHEELHOUSE, `narwhal_inference-${VERSION}-py3-none-any.whl`))) {
    await run(PIP, ["download", "-q", "--disable-pip-version-check", "--only-binary=:all:", "-d", WHEELHOUSE, `narwhal-inference==${VERSION}`], { timeout: 300_000 });
  }
  return WHEELHOUSE;
}

describe("router host: install (Gate B), narwhal-serve (Gate G) and Prometheus", function () {
  this.timeout(600_000);
  const installDir = path.join(tempDir("narwhal-install-"), "narwhal");
  let options: InstallOptions;
  let marker: InstallMarker;
  let prefill: SimEngine;
  let decode: SimEngine;
  let document: Record<string, unknown>;
  let store: string;
  let router: RouterOptions;
  let front: FrontOptions;
  let frontPid: number;
  let started: RouterStarted;
  const stops: string[] = [];

  before(async () => {
    options = { source: { kind: "version", version: VERSION }, installDir, wheelhouse: await wheelhouse(), timeoutS: 300 };
    const model = makeModel();
    [prefill, decode] = await Promise.all([startEngine({ model, args: ARGS }), startEngine({ model, args: ARGS })]);
    const spec = parseFleetConfig({
      hosts: [{ alias: "local", destination: "root@127.0.0.1", fabricInterface: "lo" }],
      engines: [
        { id: "p0", host: "local", gpuIds: [0] },
        { id: "d0", host: "local", gpuIds: [1] },
      ],
      model: { servedName: "tiny", checkpointDir: "/models/tiny" },
      slo: { ttftS: 4, tpotS: 0.2 },
    });
    const endpoints = [
      { id: "p0", url: prefill.url, attestationUrl: `${prefill.url}/v1/attestation` },
      { id: "d0", url: decode.url, attestationUrl: `${decode.url}/v1/attestation` },
    ];
    document = fleetDocument(spec, endpoints, { accelerator: "none", acceleratorsPerEngine: 1, tensorParallel: 1 }, { profilesPath: "runs/profiles.json" });
    const scratch = tempDir("router-store-");
    fs.writeFileSync(path.join(scratch, "fleet.json"), JSON.stringify(document));
    const made = spawnSync(PYTHON, [path.join(__dirname, "support", "profile-store.py"), path.join(scratch, "fleet.json"), path.join(scratch, "profiles.json"), "0.05"], {
      env: { ...process.env, [ENGINE_API_KEY_ENV]: API_KEY },
      encoding: "utf8",
    });
    expect(made.status, made.stderr).to.equal(0);
    store = fs.readFileSync(path.join(scratch, "profiles.json"), "utf8");
  });

  after(async () => {
    for (const script of stops) await sh(script);
    await stopAll();
    await sh(uninstallScript(options));
    removeTemps();
  });

  describe("Gate B: install", () => {
    it("installs the pinned version into its own venv and records revision and digest in the marker", async () => {
      const r = await sh(installScript(options));
      expect(r.code, r.stderr).to.equal(0);
      marker = lastJson<InstallMarker>(r.stdout);
      expect(marker.revision).to.equal("narwhal-inference==0.7.0");
      expect(marker.version).to.equal(VERSION);
      expect(marker.digest).to.match(/^sha256:[0-9a-f]{64}$/);
      expect(marker.binDir).to.equal(`${installDir}/narwhal-inference-0.7.0/venv/bin`);
      const version = spawnSync(`${marker.binDir}/narwhal-serve`, ["--version"], { encoding: "utf8" });
      expect(version.stdout + version.stderr).to.contain(VERSION);
      expect(JSON.parse(fs.readFileSync(`${installDir}/narwhal-inference-0.7.0/install.json`, "utf8"))).to.deep.equal(marker);
      expect(fs.statSync(installDir).mode & 0o777).to.equal(0o700);
    });

    it("adopts a finished install of the same revision without running pip again", async () => {
      const r = await sh(installScript(options));
      expect(r.code, r.stderr).to.equal(0);
      expect(lastJson<InstallMarker>(r.stdout)).to.deep.equal(marker);
    });

    it("reinstalls when the installed files no longer hash as the marker records", async () => {
      const folder = `${installDir}/narwhal-inference-0.7.0`;
      const record = fs.readdirSync(`${folder}/venv/lib`).map((py) => `${folder}/venv/lib/${py}/site-packages/narwhal_inference-${VERSION}.dist-info/RECORD`)[0];
      fs.appendFileSync(record, "tampered,,\n");
      const r = await sh(installScript(options));
      expect(r.code, r.stderr).to.equal(0);
      const again = lastJson<InstallMarker>(r.stdout);
      expect(again.digest).to.not.equal("");
      expect(fs.readFileSync(record, "utf8")).to.not.contain("tampered");
      marker = again;
    });

    it("keeps a failed install's pip.log per attempt: the retry removes only the venv it made, and lists the kept attempt", async () => {
      const other: InstallOptions = { ...options, installDir: path.join(tempDir("narwhal-install-"), "narwhal"), wheelhouse: tempDir("empty-wheelhouse-") };
      const failed = await sh(installScript(other));
      expect(failed.code).to.equal(1);
      const folder = `${other.installDir}/narwhal-inference-0.7.0`;
      const [kept, ...others] = fs.readdirSync(`${folder}/attempts`);
      expect(others).to.deep.equal([]);
      const keptLog = fs.readFileSync(`${folder}/attempts/${kept}/pip.log`, "utf8");
      expect(keptLog).to.match(/No matching distribution found for narwhal-inference==0\.7\.0/);
      expect(fs.readFileSync(`${folder}/attempts/${kept}/exit-status`, "utf8")).to.equal("1\n");
      expect(fs.existsSync(`${folder}/venv`)).to.equal(false);
      // The retry with the wheels: it installs, the failed attempt's log stays as it was, and its stdout lists it before the marker.
      const retried = await sh(installScript({ ...other, wheelhouse: options.wheelhouse }));
      expect(retried.code, retried.stderr).to.equal(0);
      expect(fs.readFileSync(`${folder}/attempts/${kept}/pip.log`, "utf8")).to.equal(keptLog);
      const [listed, ...more] = parseKeptAttempts(retried.stdout);
      expect(more).to.deep.equal([]);
      expect(listed).to.deep.include({ id: kept, exitStatus: 1, reason: "pip install narwhal-inference==0.7.0 failed or exceeded 300s" });
      expect(listed.command).to.contain(`${folder}/venv/bin/pip install`).and.contain(other.wheelhouse!);
      expect(lastJson<InstallMarker>(retried.stdout).version).to.equal(VERSION);
      // The install's record lists it as a failed attempt with its log (the CommandRecord of Gate B).
      const cwd = process.cwd();
      const project = tempDir("install-record-");
      process.chdir(project);
      try {
        const { outs } = await commandRecordProvider.create({ stack: "dev", kind: "install", hostAlias: "router", steps: [{ name: "install", script: installScript(other), stdout: retried.stdout }], observations: {} });
        const store = evidenceRoot(project, "dev");
        const record = JSON.parse(fs.readFileSync(path.join(store, outs.evidence.relativePath), "utf8"));
        const [entry] = record.observations.failedAttempts;
        expect(entry).to.deep.include({ step: "install", id: kept, verdict: "fail", exitStatus: 1 });
        expect(fs.readFileSync(path.join(store, entry.log), "utf8")).to.equal(keptLog.replace(/\n$/, ""));
        expect(record.artifacts.map((a: { name: string }) => a.name)).to.include(`install/attempts/${kept}/pip.log`);
      } finally {
        process.chdir(cwd);
      }
      // The destroy removes what the install made; the kept attempt stays.
      expect((await sh(uninstallScript(other))).code).to.equal(0);
      expect(fs.readdirSync(folder)).to.deep.equal(["attempts"]);
    });

    it("names every missing prerequisite at once and installs nothing", async () => {
      const bin = tempDir("bare-path-");
      fs.symlinkSync("/usr/bin/python3", path.join(bin, "python3"));
      fs.symlinkSync("/usr/bin/curl", path.join(bin, "curl"));
      const other = { ...options, host: "gpu7", installDir: path.join(tempDir("narwhal-install-"), "narwhal") };
      const r = await sh(installScript(other), "", { PATH: bin }, "/bin/sh");
      expect(r.code).to.equal(1);
      expect(r.stderr).to.contain("narwhal install on host gpu7: the host lacks prerequisites:");
      expect(r.stderr).to.contain("git is missing");
      expect(r.stderr).to.contain("make is missing");
      expect(r.stderr).to.contain("sha256sum is missing");
      expect(r.stderr).to.not.contain("curl is missing");
      expect(fs.existsSync(other.installDir)).to.equal(false);
    });

    it("refuses a source bundle whose digest is not the approved one, before pip sees it", async () => {
      const bundle = path.join(tempDir("bundle-"), "narwhal.tar.gz");
      fs.writeFileSync(bundle, "not the approved source");
      const approved = "ab".repeat(32);
      const other: InstallOptions = { source: { kind: "bundle", sha256: approved }, installDir: path.join(tempDir("narwhal-install-"), "narwhal"), bundlePath: bundle, timeoutS: 60 };
      const r = await sh(installScript(other));
      expect(r.code).to.equal(1);
      expect(r.stderr).to.contain(`router.narwhal.sourceBundle.sha256 is ${approved}`);
      expect(r.stderr).to.contain("nothing was installed");
      expect(fs.existsSync(`${other.installDir}/bundle-${approved.slice(0, 16)}`)).to.equal(false);
    });
  });

  describe("Gate G: narwhal-serve", () => {
    before(async () => {
      router = {
        runDir: path.join(tempDir("router-run-"), "router"),
        binDir: marker.binDir,
        bindAddress: "127.0.0.1",
        port: await freePort(),
        backendPort: await freePort(),
        fleetDocument: JSON.stringify(document, null, 2),
        profileStore: store,
        startTimeoutS: 60,
        stopTimeoutS: 10,
      };
      front = { routerDir: router.runDir, binDir: router.binDir, bindAddress: router.bindAddress, port: router.port, backendPort: router.backendPort, startTimeoutS: 60, stopTimeoutS: 10 };
      stops.push(routerStopScript(router), frontStopScript(front));
    });

    it("starts its front on the configured address and port, narwhal-serve on loopback behind it, and reports every engine ready", async () => {
      const f = await sh(frontStartScript(front));
      expect(f.code, f.stderr).to.equal(0);
      frontPid = lastJson<{ pid: number }>(f.stdout).pid;
      const r = await sh(routerStartScript(router), envFile({ [ENGINE_API_KEY_ENV]: API_KEY }));
      expect(r.code, r.stderr).to.equal(0);
      started = lastJson<RouterStarted>(r.stdout);
      expect(started.health).to.deep.include({ status: "ok", instances: 2 });
      const listener = (port: number) => spawnSync("ss", ["-Hltnp", `sport = :${port}`], { encoding: "utf8" }).stdout;
      expect(listener(router.port)).to.contain(`127.0.0.1:${router.port}`).and.contain(`pid=${frontPid},`);
      expect(listener(router.backendPort)).to.contain(`127.0.0.1:${router.backendPort}`);
      // Through the front, the router's own answers.
      const health = await http(`http://127.0.0.1:${router.port}/health`);
      expect(health.status).to.equal(200);
      expect(JSON.parse(health.text)).to.deep.include({ status: "ok", instances: 2 });
    });

    it("keeps its front when the front's start runs again with the same inputs", async () => {
      const f = await sh(frontStartScript(front));
      expect(f.code, f.stderr).to.equal(0);
      expect(lastJson<{ pid: number }>(f.stdout).pid).to.equal(frontPid);
    });

    it("keeps the document, profile store and key file private, and the key off every command line", () => {
      for (const f of ["fleet.json", "runs/profiles.json", "router.env"]) {
        expect(fs.statSync(path.join(router.runDir, f)).mode & 0o777, f).to.equal(0o600);
      }
      expect(fs.statSync(router.runDir).mode & 0o777).to.equal(0o700);
      expect(textDigest(fs.readFileSync(path.join(router.runDir, "runs/profiles.json"), "utf8"))).to.equal(textDigest(store));
      const cmdline = fs.readFileSync(`/proc/${started.pid}/cmdline`, "utf8");
      expect(cmdline).to.contain("narwhal-serve");
      expect(cmdline).to.not.contain(API_KEY);
      expect(fs.readFileSync(path.join(router.runDir, "fleet.json"), "utf8")).to.not.contain(API_KEY);
      // TLS roots from a CA directory or the operator's own setting, never certifi's bundle per client (lib/trust-store.ts).
      expect(trustStoreVariables(started.pid), "the router's SSL_CERT_* variables").to.not.be.empty;
    });

    it("proves itself: /health with the engine count, /v1/models, one completion through a prefill and a decode engine", async () => {
      const r = await sh(
        proofScript({ runDir: router.runDir, binDir: router.binDir, baseUrl: `http://127.0.0.1:${router.port}`, model: "tiny", journalPath: journalBeside("runs/profiles.json"), timeoutS: 30 }),
      );
      expect(r.code, r.stderr).to.equal(0);
      const proof = lastJson<RouterProof>(r.stdout);
      expect(judgeRouterProof(proof, { engineCount: 2, model: "tiny", engineIds: ["p0", "d0"] })).to.deep.equal([]);
      expect(proof.models).to.deep.equal(["tiny"]);
      expect(proof.journal).to.deep.include({ prefill_iid: "p0", decode_iid: "d0", terminal: "completed", crossed: true });
    });

    it("adopts itself when the start runs again for the same document and store, releasing a hold a cut-short swap left", async () => {
      // A stop's hold, as a swap cut short after it would leave it: the front holds until the start releases it.
      const held = await sh(`${PID_FILE_SH}${FRONT_HOLD_SH}front_hold ${shq(frontDir(router.runDir))} 60`);
      expect(held.code, held.stderr).to.equal(0);
      const frontState = async () => JSON.parse((await http(`http://127.0.0.1:${router.port}${FRONT_STATUS_PATH}`)).text) as { holding: boolean };
      expect(await frontState()).to.deep.include({ holding: true });
      const r = await sh(routerStartScript(router), envFile({ [ENGINE_API_KEY_ENV]: API_KEY }));
      expect(r.code, r.stderr).to.equal(0);
      expect(lastJson<RouterStarted>(r.stdout).pid).to.equal(started.pid);
      expect(await frontState()).to.deep.include({ holding: false });
    });

    it("refuses to start a second router or front on a port something else already serves", async () => {
      const port = await freePort();
      const squatter: Server = createServer();
      await new Promise<void>((resolve) => squatter.listen(port, "127.0.0.1", resolve));
      try {
        const runDir = path.join(tempDir("router-run-"), "router");
        // One line each: the port, the owner (this test's own process) and the key to change.
        const refusal = (key: string) => new RegExp(`^router: port ${port} on this host is taken by pid ${process.pid} \\(\\S*node\\b.*; stop that process or set ${key} to a free port, then run pulumi up again$`);
        const r = await sh(routerStartScript({ ...router, runDir, backendPort: port }), envFile({ [ENGINE_API_KEY_ENV]: API_KEY }));
        expect(r.code).to.equal(1);
        expect(r.stderr.trim().split("\n")).to.have.length(1);
        expect(r.stderr.trim()).to.match(refusal("router\\.backendPort"));
        expect(fs.existsSync(path.join(runDir, "pid"))).to.equal(false);
        expect(fs.existsSync(path.join(runDir, "router.env"))).to.equal(false);
        const f = await sh(frontStartScript({ ...front, routerDir: runDir, port }));
        expect(f.code).to.equal(1);
        expect(f.stderr.trim().split("\n")).to.have.length(1);
        expect(f.stderr.trim()).to.match(refusal("router\\.port"));
        expect(fs.existsSync(path.join(runDir, "front", "pid"))).to.equal(false);
      } finally {
        squatter.close();
      }
    });

    it("restarts with the same fleet document by re-matching the saved profiles: nothing is re-measured", async () => {
      const stop = await sh(routerStopScript(router));
      expect(stop.code, stop.stderr).to.equal(0);
      expect(fs.existsSync(path.join(router.runDir, "router.env"))).to.equal(false);
      const before = { p0: (await http(`${prefill.url}/metrics`)).text, d0: (await http(`${decode.url}/metrics`)).text };
      const r = await sh(routerStartScript(router), envFile({ [ENGINE_API_KEY_ENV]: API_KEY }));
      expect(r.code, r.stderr).to.equal(0);
      const again = lastJson<RouterStarted>(r.stdout);
      expect(again.pid).to.not.equal(started.pid);
      expect(again.health).to.deep.include({ status: "ok", instances: 2 });
      // The store is the one written before: the restart read it, wrote no new profile and ran no sweep.
      expect(fs.readFileSync(path.join(router.runDir, "runs/profiles.json"), "utf8")).to.equal(store);
      const prompts = (text: string) => Number(/^vllm:prompt_tokens_total\{[^}]*\} (\S+)$/m.exec(text)?.[1] ?? "0");
      const after = { p0: (await http(`${prefill.url}/metrics`)).text, d0: (await http(`${decode.url}/metrics`)).text };
      expect(prompts(after.p0)).to.equal(prompts(before.p0));
      expect(prompts(after.d0)).to.equal(prompts(before.d0));
      started = again;
    });

    it("swaps onto a new profile store in one update, failing no client: the front holds requests while the old router stops and the new one starts", async () => {
      // As the fleet runs it: Gate F wrote the store, the router knows its digest.
      const next = { ...router, profileStore: undefined, profileStoreDigest: "sha256:" + "5e".repeat(32) };
      // The start script never stops a router serving something else: only the swap, run once the preflight passed, does.
      const refused = await sh(routerStartScript(next), envFile({ [ENGINE_API_KEY_ENV]: API_KEY }));
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.contain(`router: pid ${started.pid} already serves another fleet document`);
      const clients = clientsThrough(`http://127.0.0.1:${router.port}`);
      await clients.servedOne();
      const r = await shAsync(routerSwapScript(next), envFile({ [ENGINE_API_KEY_ENV]: API_KEY }));
      const outcomes = await clients.stop();
      expect(r.code, r.stderr).to.equal(0);
      // Requests were sent before, during and after the swap; none failed, and some waited for it.
      expect(outcomes.filter((o) => o !== 200), JSON.stringify(outcomes)).to.deep.equal([]);
      expect(outcomes.length).to.be.greaterThan(3);
      const status = JSON.parse((await http(`http://127.0.0.1:${router.port}${FRONT_STATUS_PATH}`)).text) as { held: number; pid: number; holding: boolean };
      expect(status, "the front held requests during the swap").to.deep.include({ pid: frontPid, holding: false });
      expect(status.held).to.be.greaterThan(0);
      const swapped = lastJson<RouterStarted>(r.stdout);
      expect(swapped.pid).to.not.equal(started.pid);
      expect(swapped.health).to.deep.include({ status: "ok", instances: 2 });
      expect(pidAlive(started.pid), "the old router").to.equal(false);
      started = swapped;
      router = next;
    });

    it("answers 502 at once for a router that died outside a swap (nothing hides it), and serves again once the router is back", async () => {
      process.kill(-started.pid, "SIGKILL");
      const deadline = Date.now() + 10_000;
      while (pidAlive(started.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const t0 = Date.now();
      const refused = await http(`http://127.0.0.1:${router.port}/health`);
      expect(refused.status, refused.text).to.equal(502);
      expect(JSON.parse(refused.text).error).to.deep.include({ type: "router_unavailable" });
      expect(Date.now() - t0, "answered without waiting for a router").to.be.lessThan(5_000);
      const r = await sh(routerStartScript(router), envFile({ [ENGINE_API_KEY_ENV]: API_KEY }));
      expect(r.code, r.stderr).to.equal(0);
      started = lastJson<RouterStarted>(r.stdout);
      expect((await http(`http://127.0.0.1:${router.port}/health`)).status).to.equal(200);
    });

    it("one controller: another stack's check refuses the serving narwhal-serve, naming host, port, pid and command; this stack's own passes", async () => {
      const engines = documentEngines(document);
      const check = (ownRouterDir: string) =>
        controllerCheckScript({
          hostAlias: "local",
          ownRouterDir,
          engineAddresses: engines.map((e) => engineAddressOf(e.url)),
          localEngines: engines.map((e) => ({ id: e.id, port: enginePortOf(e.url) })),
          fleetAddresses: [],
        });
      const own = await sh(check(router.runDir));
      expect(own.code, own.stderr).to.equal(0);
      expect(lastJson<{ routers: number[] }>(own.stdout).routers).to.not.include(started.pid);
      const other = await sh(check(path.join(tempDir("router-run-"), "router")));
      expect(other.code, other.stdout).to.equal(1);
      expect(other.stderr.trim().split("\n"), other.stderr).to.have.length(1);
      expect(other.stderr).to.contain(`router: another Narwhal router already serves this fleet's engine(s) ${engines.map((e) => engineAddressOf(e.url)).join(", ")}: host local, port ${router.backendPort}, pid ${started.pid} (`);
      // The command line is cut to 200 characters: the venv's path is long, narwhal-serve's name comes first.
      expect(other.stderr).to.match(/pid \d+ \([^)]*narwhal-serve[^)]*\); exactly one controller may be active for a fleet/);
    });

    it("narwhal's lifecycle drain is a restart workflow: a drained engine that did not restart is not readmitted", async () => {
      // Why Gate D and F re-measures do not drain their engines through the router (docs/gates.md): a second
      // router over the same engines, so the serving one keeps its placement.
      const probe = { ...router, runDir: path.join(tempDir("router-run-"), "router"), backendPort: await freePort(), profileStore: store, profileStoreDigest: undefined };
      stops.push(routerStopScript(probe));
      const r = await sh(routerStartScript(probe), envFile({ [ENGINE_API_KEY_ENV]: API_KEY }));
      expect(r.code, r.stderr).to.equal(0);
      const base = `http://127.0.0.1:${probe.backendPort}/narwhal/lifecycle`;
      const post = async (what: string, body: unknown) => {
        const res = await fetch(`${base}/${what}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
        return { status: res.status, doc: (await res.json()) as { error: string; engines: Record<string, { state: string; accepts_new: boolean; restart_required: boolean; error: string }> } };
      };
      // Every drain through the API expects the engine's process to be replaced (restart_required); this
      // fleet has no engine_contract, so the drain itself is refused, and still holds the engine out.
      const drained = await post("drain", { engines: ["p0"], deadline_s: 30 });
      expect(drained.status, JSON.stringify(drained.doc)).to.equal(503);
      expect(drained.doc.engines.p0).to.deep.include({ state: "blocked", accepts_new: false, restart_required: true });
      const readmit = await post("readmit", { engines: ["p0"] });
      expect(readmit.status).to.equal(409);
      expect(readmit.doc.engines.p0.state).to.equal("blocked");
      expect(readmit.doc.engines.p0.accepts_new).to.equal(false);
      const stop = await sh(routerStopScript(probe));
      expect(stop.code, stop.stderr).to.equal(0);
    });
  });

  describe("monitoring: Prometheus from the generated targets, and the evidence freshness exporter", () => {
    let prom: PrometheusRunOptions;
    let fresh: FreshnessRunOptions;
    let expected: FreshnessExpectation;
    let sidecar: HttpServer;
    /** The stand-in sidecars' answer: what each vouches for, or 503 once its engine changed. */
    const vouching = { d0: true };
    const ATTESTED = "sha256:" + "a7".repeat(32);
    const fresh01 = async (): Promise<Record<string, number>> => {
      const text = (await http(`http://127.0.0.1:${fresh.port}/metrics`)).text;
      return Object.fromEntries([...text.matchAll(/^narwhal_evidence_fresh\{(?:iid="(\w+)",)?gate="(\w+)"\} (\d)$/gm)].map((m) => [`${m[1] ?? "-"}/${m[2]}`, Number(m[3])]));
    };

    before(async () => {
      // Stand-in attestation sidecars (the real narwhal-attest is proved in the attestation tests): one
      // server, the engine's id in the path.
      sidecar = createHttpServer((req, res) => {
        const iid = /^\/(\w+)\/v1\/attestation$/.exec(req.url ?? "")?.[1];
        if (iid === undefined || (iid === "d0" && !vouching.d0)) return void res.writeHead(503).end();
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ attestation_digest: ATTESTED }));
      });
      await new Promise<void>((ok) => sidecar.listen(0, "127.0.0.1", ok));
      const sidecarUrl = `http://127.0.0.1:${(sidecar.address() as { port: number }).port}`;
      const startOf = async (url: string) => Number(/^process_start_time_seconds\s+(\S+)$/m.exec((await http(`${url}/metrics`)).text)![1]);
      fresh = { dir: path.join(tempDir("freshness-"), "freshness"), port: await freePort(), startTimeoutS: 30, stopTimeoutS: 10 };
      const storePath = path.join(fresh.dir, "..", "profiles.json");
      fs.writeFileSync(storePath, JSON.stringify({ schema: "narwhal.profiles", profiles: ["p0", "d0"].map((iid) => ({ iid, generation_digest: ATTESTED })) }));
      expected = {
        routerDir: router.runDir,
        routerIdentity: routerIdentity(router),
        profileStorePath: storePath,
        engines: await Promise.all(
          [["p0", prefill.url], ["d0", decode.url]].map(async ([iid, url]) => ({ iid: iid, url: url, processStartTime: await startOf(url), attestationUrl: `${sidecarUrl}/${iid}/v1/attestation`, attestationDigest: ATTESTED })),
        ),
      };
      const e = await sh(writeFilesScript(fresh.dir, { "expected.json": JSON.stringify(expected) }));
      expect(e.code, e.stderr).to.equal(0);
      stops.unshift(freshnessStopScript(fresh));
      const f = await sh(freshnessStartScript(fresh));
      expect(f.code, f.stderr).to.equal(0);

      const dir = path.join(tempDir("prometheus-"), "prometheus");
      const port = await freePort();
      prom = localPrometheus(dir, port, { configDigest: "sha256:test" });
      stops.unshift(prometheusStopScript(prom));
      const files = {
        "prometheus.yml": JSON.stringify(prometheusConfig({ scrapeIntervalS: 1, configDir: dir, freshnessTarget: `127.0.0.1:${fresh.port}` })),
        "rules.yml": JSON.stringify(rulesFile()),
        "engines.json": JSON.stringify(engineTargets(document)),
        "router.json": JSON.stringify(routerTargets(`http://127.0.0.1:${router.port}`)),
      };
      const w = await sh(writeFilesScript(dir, files));
      expect(w.code, w.stderr).to.equal(0);
    });

    after(() => sidecar?.close());

    it("promtool accepts the generated configuration, Narwhal's six alert rules and the stale-evidence rule", async () => {
      const config = await sh(`promtool check config ${prom.dir}/prometheus.yml`);
      expect(config.code, config.stdout + config.stderr).to.equal(0);
      expect(config.stdout + config.stderr).to.contain("7 rules found");
    });

    it("the freshness exporter finds every engine's generation, attestation and profile, and the router, matching their evidence", async () => {
      expect(await fresh01()).to.deep.equal({
        "p0/generation": 1,
        "p0/attestation": 1,
        "p0/profile": 1,
        "d0/generation": 1,
        "d0/attestation": 1,
        "d0/profile": 1,
        "-/router": 1,
      });
    });

    it("calls a generation stale when the live engine started at another time than the proved one, and the router when it serves another store", async () => {
      const moved = { ...expected, routerIdentity: routerIdentity({ ...router, profileStoreDigest: "sha256:" + "0".repeat(64) }), engines: expected.engines.map((e) => (e.iid === "p0" ? { ...e, processStartTime: e.processStartTime - 1 } : e)) };
      await sh(writeFilesScript(fresh.dir, { "expected.json": JSON.stringify(moved) }));
      try {
        expect(await fresh01()).to.deep.include({ "p0/generation": 0, "d0/generation": 1, "-/router": 0 });
      } finally {
        await sh(writeFilesScript(fresh.dir, { "expected.json": JSON.stringify(expected) }));
      }
    });

    it("scrapes the router, both engines and the freshness exporter, each engine labelled with its id", async () => {
      const r = await sh(prometheusStartScript(prom));
      expect(r.code, r.stderr).to.equal(0);
      let active: Array<{ labels: Record<string, string>; health: string }> = [];
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline) {
        active = (await http(`${prom.localUrl}/api/v1/targets`)).json.data.activeTargets;
        if (active.length === 4 && active.every((t) => t.health === "up")) break;
        await new Promise((res) => setTimeout(res, 500));
      }
      expect(active.map((t) => `${t.labels.job}/${t.labels.iid ?? "-"}/${t.health}`).sort()).to.deep.equal(["engines/d0/up", "engines/p0/up", "narwhal-evidence/-/up", "narwhal-router/-/up"]);
      const rules = (await http(`${prom.localUrl}/api/v1/rules`)).json.data.groups[0].rules.map((x: { name: string }) => x.name);
      expect(rules).to.deep.equal(["NarwhalEngineDown", "NarwhalEngineEjected", "NarwhalRouterDown", "NarwhalErrorBurst", "NarwhalUnservedRising", "NarwhalPoolStarved", "NarwhalEvidenceStale"]);
    });

    it("fires NarwhalEvidenceStale within two scrape intervals of a sidecar that stops vouching for its engine, and clears once it does again", async () => {
      const firing = async () =>
        ((await http(`${prom.localUrl}/api/v1/alerts`)).json.data.alerts as Array<{ labels: Record<string, string>; state: string }>)
          .filter((a) => a.labels.alertname === "NarwhalEvidenceStale" && a.state === "firing")
          .map((a) => `${a.labels.iid}/${a.labels.gate}`)
          .sort();
      const waitFor = async (want: string[], what: string) => {
        // Scrapes and rule evaluations run every second here: 30 s is a generous bound on a loaded machine.
        const deadline = Date.now() + 30_000;
        let seen = await firing();
        while (JSON.stringify(seen) !== JSON.stringify(want) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 250));
          seen = await firing();
        }
        expect(seen, what).to.deep.equal(want);
      };
      await waitFor([], "nothing stale while every sidecar vouches");
      vouching.d0 = false;
      await waitFor(["d0/attestation", "d0/profile"], "the alert for d0 once its sidecar answers 503");
      vouching.d0 = true;
      await waitFor([], "cleared once the sidecar vouches again");
    });

    it("Gate G's trial point runs through the real router and reconciles with the router's, engines' and Prometheus' own counters", async () => {
      const rows = (JSON.parse(store) as { profiles: ProfileRow[] }).profiles;
      const routes: TrialRoutes = {
        router: `http://127.0.0.1:${router.port}`,
        engines: [
          { iid: "p0", role: "prefill", base: prefill.url },
          { iid: "d0", role: "decode", base: decode.url },
        ],
        prometheus: prom.localUrl,
      };
      const hosts: HostProbes = { sockets: async () => ({ local: spawnSync("ss", ["-s"], { encoding: "utf8" }).stdout }), listener: async () => undefined };
      const options: TrialOptions = {
        point: { id: "t1", rate: 3, requests: 9, arrival: "poisson", seed: 1, mix: [{ promptTokens: 256, outputTokens: 8, weight: 1 }] },
        model: "tiny",
        slo: { ttftS: 4, tpotS: 0.2 },
        profiles: rows.map((row) => ({ iid: row.iid, role: row.iid === "p0" ? "prefill" : "decode", row })),
        requestTimeoutS: 30,
        drainTimeoutS: 30,
        scrapeIntervalS: 1,
        minGoodFraction: 0.9,
        predictionBound: 0.5,
        routerOverheadS: 0.05,
        requestIdPrefix: "trial-t1-",
      };
      const ran = await runTrial(fetchGet, routes, hosts, options);
      const o = ran.observations;
      expect(o.reconciliation.status, o.reconciliation.causes.join("; ")).to.equal("reconciled");
      expect(ran.run.records.map((r) => r.status)).to.deep.equal(Array(9).fill("ok"));
      expect(o.summary.completed).to.equal(9);
      expect(o.summary.total_output_tokens).to.equal(72);
      expect(o.verdict).to.be.oneOf(["pass", "slo-miss"]);
      expect(ran.before.direct.router!.offered + 9).to.equal(ran.after.direct.router!.offered);
      expect(ran.after.prometheus, "Prometheus' reading after the point").to.not.equal(undefined);
      expect(o.predictedCurve.length).to.be.greaterThan(1);

      // Prometheus unreachable and a foreign process on the router's port: the point is unreconciled, never a pass.
      const blind = await runTrial(fetchGet, { ...routes, prometheus: `http://127.0.0.1:${await freePort()}` }, { ...hosts, listener: async () => `listener conflict: port ${router.port} of local is held by pid 1 (init), not the router` }, { ...options, point: { ...options.point, id: "t2", requests: 3 } });
      expect(blind.observations.verdict).to.equal("unreconciled");
      const causes = blind.observations.reconciliation.causes;
      expect(causes.some((c) => c.startsWith("failed scrape:")), causes.join("; ")).to.equal(true);
      expect(causes.some((c) => c.startsWith("listener conflict:")), causes.join("; ")).to.equal(true);
    });

    it("the dashboard queries only metrics the live router and engines export", async () => {
      const exposed = new Set<string>(["up"]);
      for (const url of [`http://127.0.0.1:${router.port}`, prefill.url, decode.url, `http://127.0.0.1:${fresh.port}`]) {
        for (const name of exposedMetrics((await http(`${url}/metrics`)).text)) exposed.add(name);
      }
      const used = PANELS.flatMap((p) => p.queries.flatMap((q) => metricNames(q.expr)));
      expect(used.length).to.be.greaterThan(15);
      expect(used.filter((m) => !exposed.has(m))).to.deep.equal([]);
    });
  });
});
