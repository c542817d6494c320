/**
 * Gate C's CacheCapture provider as the dynamic provider host calls it, against engines the program's
 * own start scripts launch on simulated hosts: a native engine on sim1 (its log in the run folder) and a
 * docker-cli container on simdock (its log from `docker logs`), both read over a real SSH login with the
 * pinned host key. Each capture is compared with the geometry the simulator says it resolved (its
 * control port, opened through the plan's environment for this test only). The native log is then cut
 * the ways a host cuts logs (rotation, copytruncate, removal, another start's content) and each cut must
 * be refused naming the host and the file, and the capture must pass again once the log is restored.
 */
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { provider as captureProvider } from "../../dynamic-providers/cache-capture/provider";
import type { CacheCaptureInputs, CacheCaptureOutputs } from "../../dynamic-providers/cache-capture/schema";
import { provider as generationProvider } from "../../dynamic-providers/engine-generation/provider";
import type { EngineGenerationOutputs } from "../../dynamic-providers/engine-generation/schema";
import { evidenceRoot } from "../../lib/evidence/store";
import { renderLaunchPlan, type LaunchInputs, type LaunchPlan } from "../../lib/launch/plan";
import { nativeEngineLogs, type EngineLogSource } from "../../lib/engine/log-source";
import { startScript as dockerStartScript, stopScript as dockerStopScript } from "../../lib/runtime/docker-cli";
import { containerRestartScript } from "../../lib/runtime/restart";
import { startScript, stopScript } from "../../lib/runtime/native";
import { envFile, shq } from "../../lib/shell";
import { loadDockerImage, simDown, simUp, sshExec } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import { buildSimImage } from "../../sim/image/build";
import { expectSimulatorTruth } from "../support/cache-truth";
import { rejection } from "../support/rejection";
import { keptAttempt } from "../support/kept-attempt";
import { ATTEMPTS_SH } from "../../lib/runtime/attempts";
import { onHost, simLaunch, simLogin } from "./support/sim-launch";

const STACK = "provider-cache-capture";
const API_KEY = "sk-narwhal-capture-3e9b1d";
const CONTROL_PORT = 9394;

function launch(h: SimHost, id: string, port: number, nixlPort: number): LaunchInputs {
  // The simulator's own port, so the test can ask what geometry it resolved; nothing the capture reads.
  const engineEnv = { NARWHAL_SIM_CONTROL_PORT: String(CONTROL_PORT), NARWHAL_SIM_TIME_SCALE: "0.05" };
  return simLaunch(h, { id, port, nixlPort, gpuIds: [0, 1] }, { policy: { engineEnv } });
}


async function must(h: SimHost, command: string): Promise<string> {
  const r = await sshExec(h, command, { timeoutMs: 30_000 });
  expect(r.code, `${command}: ${r.stderr}`).to.equal(0);
  return r.stdout;
}

async function prove(h: SimHost, plan: LaunchPlan, identity: { pid: number } | { containerId: string }): Promise<EngineGenerationOutputs> {
  const { outs } = await generationProvider.create({
    engineId: plan.engineId,
    hostAlias: h.alias,
    url: plan.url,
    planSha256: plan.planSha256,
    expectedVersion: "0.29.0",
    servedName: "tiny-llama",
    apiKey: API_KEY,
    processIdentity: { hostAlias: h.alias, ...identity },
    probeTimeoutS: 30,
  });
  return outs as EngineGenerationOutputs;
}

function captureInputs(h: SimHost, g: EngineGenerationOutputs, engineLog: EngineLogSource, over: Partial<CacheCaptureInputs> = {}): CacheCaptureInputs {
  return {
    engineId: g.engineId,
    hostAlias: h.alias,
    url: g.url,
    generationDigest: g.generationDigest,
    planSha256: g.planSha256,
    processIdentity: g.processIdentity,
    expected: { blockSize: 16, tensorParallelSize: 2, dtype: "bfloat16", kvCacheDtype: "auto" },
    apiKey: API_KEY,
    ...simLogin(h),
    engineLog,
    modelDir: h.modelDir,
    probeTimeoutS: 30,
    stack: STACK,
    ...over,
  };
}

/** Each rank's record must be the geometry the simulator resolved (its control port's /cache-layout). */
async function expectTruth(h: SimHost, outs: CacheCaptureOutputs): Promise<void> {
  const truth = (await (await fetch(`http://${h.address}:${CONTROL_PORT}/cache-layout`)).json()) as Record<string, any>;
  expect(outs.layout.tensorParallelSize).to.equal(truth.tensor_parallel_size).and.equal(2);
  expect(outs.layout.ranks.map((r) => r.rank)).to.deep.equal([0, 1]);
  expectSimulatorTruth(outs.layout, truth);
}

describe("providers: cache capture from what the engine shows, read over SSH", function () {
  this.timeout(240_000);

  describe("a native engine on sim1 (its run folder's log)", () => {
    let h: SimHost;
    let plan: LaunchPlan;
    let runDir: string;
    let log: string;
    let pid: number;
    let proved: EngineGenerationOutputs;
    const runtime = () => ({ runDir, healthTimeoutS: 90, stopTimeoutS: 10 });

    before(async () => {
      const fleet = await simUp({});
      h = fleet.hosts.find((x) => x.alias === "sim1")!;
      const id = `cc-${randomBytes(3).toString("hex")}`;
      plan = renderLaunchPlan(launch(h, id, 8394, 5794));
      runDir = `/srv/${STACK}/${id}`;
      log = `${runDir}/engine.log`;
      const started = await onHost(h, startScript(plan, runtime()), envFile({ VLLM_API_KEY: API_KEY }));
      expect(started.code, started.stderr).to.equal(0);
      pid = (JSON.parse(started.stdout.trim().split("\n").pop()!) as { pid: number }).pid;
      proved = await prove(h, plan, { pid });
    });

    after(async () => {
      if (plan) await onHost(h, `${stopScript(plan, runtime())}\nrm -rf /srv/${STACK}`);
    });

    it("captures each TP rank from the engine's log, config.json and /metrics, and records the lines it read", async () => {
      const inputs = captureInputs(h, proved, nativeEngineLogs(runDir));
      expect((await captureProvider.check!({}, inputs)).failures).to.equal(undefined);
      const { id, outs } = await captureProvider.create(inputs);
      const o = outs as CacheCaptureOutputs;
      await expectTruth(h, o);
      expect(id).to.equal(`${plan.engineId}-cache-${o.cacheLayoutDigest.slice(7, 19)}`);
      expect(o.layout.source).to.equal("engine-log");
      expect(o.sources.log).to.include({ source: log, apiServerPid: pid });
      expect(o.sources.log.totalBytes).to.equal(o.sources.log.readBytes);
      const logText = await must(h, `cat ${log}`);
      const byNumber = logText.split("\n");
      const read = o.sources.log.lines;
      expect(read.filter((l) => /Available KV cache memory/.test(l.text)).map((l) => l.text.slice(0, 12))).to.deep.equal(["(Worker_TP0 ", "(Worker_TP1 "]);
      for (const l of read.filter((x) => !x.text.includes("non-default args"))) expect(byNumber[l.n - 1], `line ${l.n}`).to.equal(l.text);
      expect(o.sources.modelConfig.path).to.equal(`${h.modelDir}/config.json`);
      expect(o.sources.modelConfig.sha256).to.equal(`sha256:${(await must(h, `sha256sum ${h.modelDir}/config.json`)).split(" ")[0]}`);

      const record = JSON.parse(fs.readFileSync(path.join(evidenceRoot(process.cwd(), STACK), o.evidence!.relativePath), "utf8"));
      expect(record.kind).to.equal("cache-capture");
      expect(record.observations.sources).to.deep.equal(o.sources);
      // The log, config.json, and when the log's API server started.
      const commands = record.commands as Array<{ host: string; exitStatus: number; http?: { method: string; target: string; path: string; requests: number }; httpStatuses?: Record<string, number> }>;
      expect(commands.filter((c) => !c.http).map((c) => [c.host, c.exitStatus])).to.deep.equal([["sim1", 0], ["sim1", 0], ["sim1", 0]]);
      // Its requests to the engine, by alias: the identity checks before and after, and the metrics read.
      const http = commands.filter((c) => c.http);
      expect(http.map((c) => `${c.http!.method} ${c.http!.target} ${c.http!.path}`)).to.include.members([`GET engine ${inputs.engineId} /metrics`, `GET engine ${inputs.engineId} /version`]);
      for (const c of http) expect(c).to.deep.include({ host: "local", exitStatus: 0, httpStatuses: { "200": c.http!.requests } });
      expect(JSON.stringify(http)).to.not.match(/\d+\.\d+\.\d+\.\d+/);
      // The engine's /metrics answer the capture read is kept, byte for byte, as an artifact.
      const metrics = (record.artifacts as Array<{ name: string; relativePath: string }>).find((a) => a.name === `engine ${inputs.engineId}: GET /metrics -> 200`)!;
      expect(fs.readFileSync(path.join(evidenceRoot(process.cwd(), STACK), metrics.relativePath), "utf8")).to.match(/vllm:cache_config_info/);
      expect(JSON.stringify(record)).to.not.contain(API_KEY);
      expect(await captureProvider.diff!("id", o, inputs)).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
    });

    it("lists the failed starts kept in the engine's run folder as failed attempts of its record, with their logs", async () => {
      // A failed start as the start script keeps it (lib/runtime/native.ts): its log, exit status and command line.
      await must(h, `cd ${runDir} && mkdir failed && printf 'RuntimeError: CUDA out of memory\\n' > failed/engine.log && sh -c ${shq(`${ATTEMPTS_SH}keep_attempt "$PWD/attempts" 2026-01-02T03:04:05Z 1 'engine exited before answering /health' 'vllm serve /models/m' "$PWD/failed/engine.log"`)} && rmdir failed`);
      try {
        const { outs } = await captureProvider.create(captureInputs(h, proved, nativeEngineLogs(runDir), { runDir }));
        const o = outs as CacheCaptureOutputs;
        const store = evidenceRoot(process.cwd(), STACK);
        const record = JSON.parse(fs.readFileSync(path.join(store, o.evidence!.relativePath), "utf8"));
        expect(record.verdict.status).to.equal("pass");
        const [failed, ...others] = record.observations.failedAttempts;
        expect(others).to.deep.equal([]);
        expect(failed).to.deep.include({ verdict: "fail", exitStatus: 1, reason: "engine exited before answering /health", command: "vllm serve /models/m", startedAt: "2026-01-02T03:04:05.000Z" });
        expect(fs.readFileSync(path.join(store, failed.log), "utf8")).to.equal("RuntimeError: CUDA out of memory");
        // Beside the engine's answers the capture read, the kept start's log.
        expect(record.artifacts.map((a: { name: string }) => a.name).filter((n: string) => !n.startsWith("engine "))).to.deep.equal([`engine-start/attempts/${failed.id}/engine.log`]);
        // The listing is one more command the capture ran on the host, with its exit status.
        expect(record.commands.filter((c: { http?: unknown }) => !c.http)).to.have.length(4);
      } finally {
        await must(h, `rm -rf ${runDir}/attempts`);
      }
    });

    it("refuses a layout that disagrees with the plan, naming each difference", async () => {
      const err = await rejection(captureProvider.create(captureInputs(h, proved, nativeEngineLogs(runDir), { expected: { blockSize: 128, tensorParallelSize: 4, dtype: "float16", kvCacheDtype: "auto" } })));
      expect(err.code).to.equal("NARWHAL_CACHE_LAYOUT_MISMATCH");
      expect(err.message).to.contain("(source engine-log) does not match its plan; nothing was captured:\n  - the engine runs tensor parallel size 2; the plan has 4\n  - block_size 16 (vllm:cache_config_info); the plan has 128\n  - ranks 2, 3 of 4 missing");
      // The failed capture is kept before the error is seen: its reasons, the commands with their exit
      // statuses, the log and config.json as read and the engine's answers.
      const { record, artifacts } = keptAttempt(err.message, STACK);
      expect(record).to.deep.include({ kind: "cache-capture", subject: { kind: "engine", alias: plan.engineId } });
      expect(record.verdict.status).to.equal("fail");
      expect(record.verdict.reasons).to.include("- ranks 2, 3 of 4 missing");
      expect(record.inputs.expected).to.deep.equal({ blockSize: 128, tensorParallelSize: 4, dtype: "float16", kvCacheDtype: "auto" });
      expect(record.commands.filter((c: { http?: unknown }) => !c.http).map((c: { host: string; exitStatus: number }) => [c.host, c.exitStatus])).to.deep.equal([["sim1", 0], ["sim1", 0], ["sim1", 0]]);
      // And its requests to the engine, by alias.
      expect(record.commands.filter((c: { http?: unknown }) => c.http).every((c: { host: string }) => c.host === "local")).to.equal(true);
      expect(artifacts[`reading the engine log ${log}`]).to.contain(`(APIServer pid=${pid})`);
      expect(artifacts["GET /metrics"]).to.match(/^HTTP 200\n/).and.contain("vllm:cache_config_info");
      expect(JSON.stringify(record) + Object.values(artifacts).join("")).to.not.contain(API_KEY);
    });

    describe("a log cut since the start is refused naming the host and the file, never guessed from", () => {
      const saved = () => `${runDir}/engine.log.saved`;
      // The engine writes to the file it opened at start: a rotated one is moved back before its content is.
      const restore = async () => must(h, `if [ -e ${log}.1 ]; then mv -f ${log}.1 ${log}; fi; cat ${saved()} > ${log}`);
      // Each refusal is kept as a fail record with the log as read; the message is compared without the record's path.
      const capture = async (logs: EngineLogSource = nativeEngineLogs(runDir)) => {
        const err = await rejection(captureProvider.create(captureInputs(h, proved, logs)));
        const { record, artifacts } = keptAttempt(err.message, STACK);
        expect(record.verdict.status).to.equal("fail");
        expect(record.observations.error.code).to.equal(err.code);
        expect(Object.keys(artifacts).some((name) => name.startsWith("reading the engine log "))).to.equal(true);
        return { code: err.code, message: err.message.replace(/\nthe failed attempt is kept as \S+$/, "") };
      };
      before(async () => must(h, `cp ${log} ${saved()}`));
      afterEach(restore);

      it("rotated (create mode): the new file holds only what came after", async () => {
        await must(h, `mv ${log} ${log}.1 && : > ${log}`);
        let err = await capture();
        expect([err.code, err.message]).to.deep.equal([
          "NARWHAL_CACHE_LOG_ROTATED",
          `host sim1: ${log}: the log is empty: it was truncated or replaced since the engine started (the engine writes its startup lines before it serves)`,
        ]);
        await must(h, `printf '(APIServer pid=${pid}) INFO:     198.18.0.1:40000 - "GET /health HTTP/1.1" 200 OK\\n' >> ${log}`);
        err = await capture();
        expect(err.code).to.equal("NARWHAL_CACHE_LOG_ROTATED");
        expect(err.message).to.equal(
          `host sim1: ${log}: the log's first vLLM line (line 1, "(APIServer pid=${pid}) INFO:     198.18.0.1:40000 - \\"GET /health HTTP/1.1\\" 200 OK") is not the API server's startup line ` +
            "'vLLM API server version …': it was rotated or truncated since the engine started, so the startup lines it needs are gone; restart the engine to capture its cache",
        );
      });

      it("truncated in place (copytruncate) while the engine keeps writing at its offset", async () => {
        await must(h, `truncate -s 0 ${log}`);
        // The engine's next lines (SIGUSR2 marks it dead, then alive, each with a warning) land past a hole of NULs.
        await must(h, `kill -USR2 ${pid}; sleep 0.3; kill -USR2 ${pid}; sleep 0.3`);
        expect(await must(h, `head -c 1 ${log} | od -An -c`)).to.match(/\\0/);
        const err = await capture();
        expect(err.code).to.equal("NARWHAL_CACHE_LOG_ROTATED");
        expect(err.message).to.match(new RegExp(`^host sim1: ${log}: the log begins with \\d+ NUL bytes: it was truncated while the engine kept writing \\(copytruncate rotation\\)`));
      });

      it("removed", async () => {
        await must(h, `rm ${log}`);
        const err = await capture();
        expect([err.code, err.message]).to.deep.equal([
          "NARWHAL_CACHE_LOG",
          `host sim1: ${log}: the engine's log does not exist: it was removed or rotated away since the engine started, so its startup lines cannot be read; restart the engine to capture its cache`,
        ]);
      });

      it("another start's log: its API server no longer runs, or is not the process serving now", async () => {
        // A process that ran and exited: its pid names no process now.
        const gone = Number((await must(h, "sh -c 'echo $$'")).trim());
        await must(h, `sed 's/(APIServer pid=${pid})/(APIServer pid=${gone})/' ${saved()} > ${log}`);
        let err = await capture();
        expect(err.code).to.equal("NARWHAL_CACHE_LOG_ROTATED");
        expect(err.message).to.match(new RegExp(`^host sim1: ${log}: the log was written by API server pid ${gone}, which no longer runs: it is another start's log, not the serving engine's \\(started `));
        // This test runner runs (the simulated hosts share its process ids), but it is not the engine that serves.
        await must(h, `sed 's/(APIServer pid=${pid})/(APIServer pid=${process.pid})/' ${saved()} > ${log}`);
        err = await capture();
        expect(err.code).to.equal("NARWHAL_CACHE_LOG_ROTATED");
        expect(err.message).to.match(new RegExp(`^host sim1: ${log}: the log was written by API server pid ${process.pid}, started .*, but the serving engine started .* \\(process_start_time_seconds\\): it is another start's log$`));
      });

      it("with several candidate files (a runbook launcher's and the run folder's), takes the one the serving process wrote, and names each when none is", async () => {
        const stale = `${runDir}/startup.log`;
        await must(h, `sed 's/(APIServer pid=${pid})/(APIServer pid=${process.pid})/' ${saved()} > ${stale}`);
        const both = { kind: "files" as const, paths: [stale, log] };
        const { outs } = await captureProvider.create(captureInputs(h, proved, both));
        expect((outs as CacheCaptureOutputs).sources.log).to.include({ source: log, apiServerPid: pid });
        await must(h, `rm ${log}`);
        const err = await capture(both);
        expect(err.code).to.equal("NARWHAL_CACHE_LOG_ROTATED");
        expect(err.message).to.match(
          new RegExp(
            `^host sim1: no log of the serving engine: ${stale}: the log was written by API server pid ${process.pid}, started .*: it is another start's log; ` +
              `${log}: the engine's log does not exist: it was removed or rotated away since the engine started, so its startup lines cannot be read; restart the engine to capture its cache$`,
          ),
        );
      });

      it("passes again on the restored log", async () => {
        await restore();
        const { outs } = await captureProvider.create(captureInputs(h, proved, nativeEngineLogs(runDir)));
        await expectTruth(h, outs as CacheCaptureOutputs);
      });
    });
  });

  describe("a docker-cli container on simdock (its log from docker logs)", () => {
    let h: SimHost;
    let image: string;
    let plan: LaunchPlan;
    const runDir = `/srv/${STACK}/container`;
    const target = (p: LaunchPlan) => ({ image, modelDir: h.modelDir, engineId: p.engineId, stack: STACK });
    const opts = { runDir, deadlinesS: { pull: 600, start: 90, stop: 10, inspect: 30 } };

    before(async function () {
      this.timeout(300_000);
      [h] = (await simUp({ dockerHosts: ["simdock"], aliases: ["simdock"] })).hosts as [SimHost];
      image = buildSimImage({ log: () => undefined }).id;
      await loadDockerImage("simdock", image);
      plan = renderLaunchPlan(launch(h, `cc-dock-${randomBytes(3).toString("hex")}`, 8395, 5795));
    });

    after(async () => {
      if (plan) await onHost(h, dockerStopScript(plan, target(plan), opts));
      if (h) await simDown({ aliases: ["simdock"] });
    });

    it("captures each TP rank from the container's log since its latest start (a docker restart keeps the earlier run's lines), naming the command it read", async () => {
      const started = await onHost(h, dockerStartScript(plan, target(plan), opts), envFile({ VLLM_API_KEY: API_KEY }));
      expect(started.code, started.stderr).to.equal(0);
      const containerId = (JSON.parse(started.stdout.trim().split("\n").pop()!) as { containerId: string }).containerId;
      const g = await prove(h, plan, { containerId });
      const inputs = captureInputs(h, g, { kind: "container", dockerCommand: "docker" });
      expect((await captureProvider.check!({}, inputs)).failures).to.equal(undefined);
      const o = (await captureProvider.create(inputs)).outs as CacheCaptureOutputs;
      await expectTruth(h, o);
      const since = (await must(h, `docker inspect --format '{{.State.StartedAt}}' ${containerId}`)).trim();
      expect(o.sources.log.source).to.equal(`docker logs ${containerId.slice(0, 12)} --since ${since}`);
      expect(o.sources.log).to.not.have.property("totalBytes");
      const logs = (await must(h, `docker logs --since ${since} ${containerId} 2>&1`)).split("\n");
      for (const l of o.sources.log.lines.filter((x) => !x.text.includes("non-default args"))) expect(logs[l.n - 1], `line ${l.n}`).to.equal(l.text);
      expect(o.sources.log.apiServerPid).to.equal(Number(/^\(APIServer pid=(\d+)\)/.exec(logs[0])![1]));

      // The peer wave's restart (`docker restart`) keeps the first run's lines in the container's log: the
      // capture reads the latest run alone, and passes for the new generation.
      const restarted = await onHost(h, containerRestartScript(plan, "docker", containerId, { stop: 10, health: 90 }, { runDir, inspectS: 30 }));
      expect(restarted.code, restarted.stderr).to.equal(0);
      expect((await must(h, `docker logs ${containerId} 2>&1`)).match(/vLLM API server version/g)).to.have.length(2);
      const again = (await captureProvider.create(captureInputs(h, await prove(h, plan, { containerId }), { kind: "container", dockerCommand: "docker" }))).outs as CacheCaptureOutputs;
      await expectTruth(h, again);
      expect(again.sources.log.source).to.not.equal(o.sources.log.source);
    });
  });
});
