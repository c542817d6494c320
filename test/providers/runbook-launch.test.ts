/**
 * An engine started the way the runbook's launcher starts a native engine (its launch directory with
 * launch.json, checked.json, the private engine.env and native-process.json; the process a session
 * leader), here the engine simulator on 127.0.0.1 standing in for vLLM. The survey script and the
 * native start script run for real under sh, the decision in between is lib/launch/runbook.ts, and the
 * EngineGeneration provider proves whichever process the start left serving.
 */
import { expect } from "chai";
import { spawn } from "node:child_process";
import { shAsync } from "../support/sh-async";
import * as fs from "node:fs";
import * as path from "node:path";
import { provider as generationProvider } from "../../dynamic-providers/engine-generation/provider";
import type { EngineGenerationOutputs } from "../../dynamic-providers/engine-generation/schema";
import { renderLaunchPlan, type LaunchPlan } from "../../lib/launch/plan";
import { decideRunbookAdoption, runbookAttestationOf, surveyEnvKeys, type RunbookDecision } from "../../lib/launch/runbook";
import { startScript, stopScript, type NativeRuntimeOptions } from "../../lib/runtime/native";
import { parseSurvey, surveyScript } from "../../lib/runtime/runbook-survey";
import { envFile } from "../../lib/shell";
import { launchInputs } from "../unit/launch/inputs";
import { processIdentity, runbookEnv, runbookPlan, writeRunbookRun } from "../unit/launch/runbook-record";
import { freePorts, http, makeModel, removeTemps, ROOT, tempDir } from "../unit/sim-engine/helpers";

const API_KEY = "sk-runbook-adopt-51d0";

/** Scripts run asynchronously: the runbook's engine is this test's child, and only a running event loop reaps it once a script has stopped it. */
const sh = shAsync;

/** Running, not a zombie waiting to be reaped. */
function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2));
  } catch {
    return false;
  }
}

async function waitHealthy(url: string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      if ((await http(`${url}/health`)).status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`${url} did not answer /health within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function processStart(url: string): Promise<number> {
  const metrics = (await http(`${url}/metrics`, { headers: { Authorization: `Bearer ${API_KEY}` } })).text;
  return Number(/^process_start_time_seconds (\S+)/m.exec(metrics)![1]);
}

describe("runbook-launched engines: adopted when their plan equals the program's, replaced otherwise", function () {
  this.timeout(120_000);
  let dir: string;
  let vllm: string;
  let plan: LaunchPlan;
  let runbookPid: number;
  let runbookRun: string;
  const started: number[] = [];
  const runtime = (runbook?: NativeRuntimeOptions["runbook"]): NativeRuntimeOptions => ({ runDir: path.join(dir, "program-run"), healthTimeoutS: 60, stopTimeoutS: 5, runbook });

  /** `launch_engine start` of a native launch: the serving process as a session leader, its identity recorded. */
  async function runbookStart(p: LaunchPlan, launch: Record<string, unknown>): Promise<void> {
    runbookRun = path.join(dir, `runs/engine-launch-20260101T000000Z-${process.pid}`);
    writeRunbookRun(runbookRun, launch, runbookEnv(p, API_KEY));
    const log = fs.openSync(path.join(runbookRun, "startup.log"), "wx", 0o600);
    const child = spawn(vllm, p.argv.slice(1), { env: { PATH: process.env.PATH!, ...runbookEnv(p, API_KEY) }, detached: true, stdio: ["ignore", log, log] });
    child.unref();
    fs.closeSync(log);
    runbookPid = child.pid!;
    started.push(runbookPid);
    fs.writeFileSync(path.join(runbookRun, "native-process.json"), JSON.stringify(processIdentity(runbookPid), null, 2) + "\n", { mode: 0o600 });
    await waitHealthy(p.url);
  }

  async function survey(p: LaunchPlan): Promise<RunbookDecision & { surveyLine: string }> {
    const r = await sh(surveyScript({ run: runbookRun, envKeys: surveyEnvKeys(p), inspectTimeoutS: 10 }));
    expect(r.code, r.stderr).to.equal(0);
    return { ...decideRunbookAdoption({ plan: p }, parseSurvey(r.stdout)), surveyLine: r.stdout };
  }

  function takeover(d: RunbookDecision): NativeRuntimeOptions["runbook"] {
    if (d.action === "start") return undefined;
    if (!("pid" in d.identity)) throw new Error("expected a native identity");
    return { action: d.action, ...d.identity, run: runbookRun, runbookPlanSha256: d.action === "adopt" ? d.runbookPlanSha256 : undefined, reason: d.reason };
  }

  beforeEach(async () => {
    dir = tempDir("runbook-launch-");
    vllm = path.join(dir, "vllm");
    // The simulator stands in for vLLM under the command name the plan runs.
    fs.writeFileSync(vllm, `#!/bin/sh\nexec ${process.execPath} -r ${ROOT}/tools/ts-require.js ${ROOT}/sim/engine/main.ts "$@"\n`, { mode: 0o755 });
    const base = launchInputs({ vllmCommand: vllm, maxModelLen: 1024, blockSize: 16 });
    const [port, nixlPort] = await freePorts(2);
    plan = renderLaunchPlan({
      ...base,
      engine: { id: "e1", port, nixlPort, gpuIds: [0], gpuIdsNamed: true },
      host: { ...base.host, fabricAddress: "127.0.0.1", fabricInterface: "lo" },
      model: { servedName: "tiny", checkpointDir: makeModel() },
      policy: { ...base.policy, tensorParallelSize: 1 },
    });
  });

  afterEach(async () => {
    await sh(stopScript(plan, runtime()));
    for (const pid of started.splice(0)) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    removeTemps();
  });

  it("adopts the runbook's engine serving the same plan: same pid, same start time, proof bound to it", async () => {
    await runbookStart(plan, runbookPlan(plan, { backend: "native" }));
    const before = processIdentity(runbookPid);
    const startBefore = await processStart(plan.url);

    fs.writeFileSync(path.join(runbookRun, "engine-attestation.json"), '{"schema":"narwhal.attestation"}\n', { mode: 0o600 });
    const d = await survey(plan);
    expect(d.action, d.reason).to.equal("adopt");
    expect(d.surveyLine, "the survey never carries the API key").to.not.include(API_KEY);
    // The runbook sidecar's document travels on with the process start /proc gives: the engine's own clock.
    const document = runbookAttestationOf(d, parseSurvey(d.surveyLine))!;
    expect(document.text).to.equal('{"schema":"narwhal.attestation"}\n');
    expect(Math.abs(document.processStartS - startBefore)).to.be.below(1);

    const r = await sh(startScript(plan, runtime(takeover(d))), envFile({ VLLM_API_KEY: API_KEY }));
    expect(r.code, r.stderr).to.equal(0);
    const out = JSON.parse(r.stdout.trim()) as { pid: number; startedAt: string; adopted: { launcher: string; run: string; planSha256: string } };
    expect(out.pid).to.equal(runbookPid);
    expect(out.adopted).to.deep.equal({ launcher: "runbook", run: runbookRun, planSha256: d.action === "adopt" ? d.runbookPlanSha256 : "" });
    // startedAt is the process's own start (second precision), not the moment of adoption.
    expect(Math.abs(Date.parse(out.startedAt) / 1000 - startBefore)).to.be.lessThan(2);
    expect(processIdentity(runbookPid)).to.deep.equal(before);
    expect(await processStart(plan.url)).to.equal(startBefore);

    const { outs } = await generationProvider.create({
      engineId: "e1", hostAlias: "local", url: plan.url, planSha256: plan.planSha256, expectedVersion: "0.29.0",
      servedName: "tiny", apiKey: API_KEY, processIdentity: { hostAlias: "local", pid: out.pid }, probeTimeoutS: 10,
    });
    expect((outs as EngineGenerationOutputs).processStartTime).to.equal(startBefore);

    // The adopted engine is now the program's own: a second start keeps it, the stop takes it down.
    const again = await sh(startScript(plan, runtime()), envFile({ VLLM_API_KEY: API_KEY }));
    expect(JSON.parse(again.stdout.trim()).pid).to.equal(runbookPid);
    expect((await sh(stopScript(plan, runtime()))).code).to.equal(0);
    expect(alive(runbookPid)).to.equal(false);
  });

  it("refuses to adopt an engine running another plan, names the differing field, and replaces it", async () => {
    await runbookStart(plan, runbookPlan(plan, { backend: "native" }));
    const startBefore = await processStart(plan.url);
    const ours = renderLaunchPlan({ ...launchInputs({ vllmCommand: vllm, maxModelLen: 1024, blockSize: 16, maxNumSeqs: 4, tensorParallelSize: 1 }), engine: { id: "e1", port: Number(new URL(plan.url).port), nixlPort: Number(plan.env.VLLM_NIXL_SIDE_CHANNEL_PORT), gpuIds: [0], gpuIdsNamed: true }, host: { ...launchInputs().host, fabricAddress: "127.0.0.1", fabricInterface: "lo" }, model: { servedName: "tiny", checkpointDir: plan.argv[2] } });

    const d = await survey(ours);
    expect(d.action).to.equal("replace");
    expect(d.reason).to.include("argv --max-num-seqs is 8 there, 4 here");

    plan = ours;
    const r = await sh(startScript(ours, runtime(takeover(d))), envFile({ VLLM_API_KEY: API_KEY }));
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stderr).to.include("argv --max-num-seqs");
    const out = JSON.parse(r.stdout.trim()) as { pid: number; adopted?: unknown };
    started.push(out.pid);
    expect(out.pid).to.not.equal(runbookPid);
    expect(out.adopted).to.equal(undefined);
    expect(alive(runbookPid), "the runbook's engine was stopped").to.equal(false);
    expect(await processStart(ours.url)).to.be.greaterThan(startBefore);
  });

  it("starts the program's engine when the recorded process is gone or the directory is missing, and stops nothing", async () => {
    runbookRun = path.join(dir, "runs/engine-launch-gone");
    writeRunbookRun(runbookRun, runbookPlan(plan, { backend: "native" }), runbookEnv(plan, API_KEY));
    // A pid that ran once and exited: its record outlives it.
    const exited = spawn("true");
    await new Promise((r) => exited.once("exit", r));
    fs.writeFileSync(path.join(runbookRun, "native-process.json"), JSON.stringify({ pid: exited.pid, boot_id: "x", start_ticks: 1 }));
    const d = await survey(plan);
    expect(d.action).to.equal("start");
    expect(d.reason).to.include(`its recorded process ${exited.pid} no longer runs`);

    runbookRun = path.join(dir, "runs/never-made");
    const missing = await survey(plan);
    expect(missing.action).to.equal("start");
    expect(missing.reason).to.include("holds no launch.json");
  });
});
