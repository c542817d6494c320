/**
 * The docker CLI runtime against the LOCAL Docker Engine: the start/stop/reconcile scripts run with
 * `bash -c` here, as the engine host would run them over SSH, on the engine-simulator image that
 * sim/image/build.ts builds without a registry. Engines listen on 127.0.0.1 only (host network), the
 * model is a tiny test model mounted read-only, and every container carries this run's own stack label,
 * which the hooks use to remove whatever a failing test leaves behind. The last cases start a container
 * the way the runbook's launcher does (`docker create --label io.narwhal.launch=<owner> --entrypoint
 * python3 <image> -m vllm.entrypoints.openai.api_server …`, its launch directory beside it) and run the
 * survey, the decision of lib/launch/runbook.ts and the start script's takeover for real.
 */
import { expect } from "chai";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { LaunchInputs, LaunchPlan, renderLaunchPlan } from "../../lib/launch/plan";
import { LABELS } from "../../lib/runtime/container-spec";
import { ContainerTarget, DockerCliOptions, reconcileScript, RunbookContainerTakeover, startScript, stopScript } from "../../lib/runtime/docker-cli";
import { decideRunbookAdoption, surveyEnvKeys, type RunbookDecision } from "../../lib/launch/runbook";
import { parseSurvey, runbookListenerPidsScript, surveyScript } from "../../lib/runtime/runbook-survey";
import { runbookEnv, runbookPlan, writeRunbookRun } from "../unit/launch/runbook-record";
import { envFile } from "../../lib/shell";
import { listAttemptsScript, parseKeptAttempts } from "../../lib/runtime/attempts";
import { buildSimImage } from "../../sim/image/build";
import { writeTestModel } from "../../sim/engine/testing-model";
import { freePorts } from "../unit/sim-engine/helpers";

const STACK = `dctest${process.pid}`;
const API_KEY = "narwhal-docker-cli-key-5d1e7b";
const DEADLINES = { pull: 600, start: 60, stop: 10, inspect: 30 };

function docker(...args: string[]): string {
  const r = spawnSync("docker", args, { encoding: "utf8", timeout: 60_000 });
  if (r.status !== 0) throw new Error(`docker ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
}

async function httpStatus(url: string, headers: Record<string, string> = {}): Promise<number | "refused"> {
  try {
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(5000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return "refused";
  }
}

interface Result {
  status: number | null;
  stdout: string;
  stderr: string;
}

function sh(script: string, input = ""): Result {
  const r = spawnSync("bash", ["-c", script], { input, encoding: "utf8", timeout: 180_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function lastJson(out: string): Record<string, unknown> {
  return JSON.parse(out.trim().split("\n").pop() ?? "{}") as Record<string, unknown>;
}

describe("docker-cli runtime on the local Docker Engine", function () {
  this.timeout(180_000);
  let image: string;
  let dir: string;
  let modelDir: string;

  /** Containers of this test run (stack label), optionally of one engine. */
  function containers(engineId?: string): string[] {
    const filters = ["--filter", `label=${LABELS.stack}=${STACK}`, ...(engineId ? ["--filter", `label=${LABELS.engine}=${engineId}`] : [])];
    const out = docker("ps", "-aq", "--no-trunc", ...filters);
    return out ? out.split("\n") : [];
  }

  function removeAll(): void {
    const ids = containers();
    if (ids.length > 0) spawnSync("docker", ["rm", "-f", ...ids], { encoding: "utf8", timeout: 60_000 });
  }

  interface Engine {
    inputs: LaunchInputs;
    plan: LaunchPlan;
    target: ContainerTarget;
    opts: DockerCliOptions;
    runDir: string;
  }

  interface Overrides {
    env?: Record<string, string>;
    policy?: Partial<LaunchInputs["policy"]>;
    model?: Partial<LaunchInputs["model"]>;
    image?: string;
    docker?: string;
    deadlines?: Partial<typeof DEADLINES>;
  }

  async function engine(id: string, over: Overrides = {}): Promise<Engine> {
    const [port, nixlPort] = await freePorts(2);
    const inputs: LaunchInputs = {
      engine: { id, port, nixlPort, gpuIds: [0], gpuIdsNamed: true },
      host: { alias: "local", fabricInterface: "lo", fabricAddress: "127.0.0.1", vendor: "none" },
      model: { servedName: "tiny", checkpointDir: modelDir, maxPositionEmbeddings: 4096, ...over.model },
      policy: {
        vllmCommand: "vllm", transport: "tcp", dtype: "model", kvCacheDtype: "auto", blockSize: 16, enforceEager: true,
        maxModelLen: 2048, maxNumSeqs: 8, gpuMemoryUtilization: 0.9, tensorParallelSize: 1, prefixCaching: true,
        ucxTcpPortRange: "6300-6500", kvLeaseDurationS: 30,
        engineEnv: { NARWHAL_SIM_TIME_SCALE: "0.05", ...over.env },
        ...over.policy,
      },
    };
    const runDir = join(dir, "runs", id);
    return {
      inputs,
      plan: renderLaunchPlan(inputs),
      target: { image: over.image ?? image, modelDir, engineId: id, stack: STACK },
      opts: { runDir, dockerCommand: over.docker, deadlinesS: { ...DEADLINES, ...over.deadlines } },
      runDir,
    };
  }

  const start = (e: Engine) => sh(startScript(e.plan, e.target, e.opts), envFile({ VLLM_API_KEY: API_KEY }));
  const stop = (e: Engine) => sh(stopScript(e.plan, e.target, e.opts));
  const reconcile = (e: Engine) => sh(reconcileScript(e.plan, e.target, e.opts));

  /** A docker client that runs the real one but misbehaves for one subcommand. */
  function wrapper(name: string, body: string): string {
    const path = join(dir, name);
    writeFileSync(path, `#!/bin/bash\n${body}\nexec docker "$@"\n`);
    chmodSync(path, 0o755);
    return path;
  }

  before(function () {
    const info = spawnSync("docker", ["info", "--format", "{{.ServerVersion}}"], { encoding: "utf8", timeout: 30_000 });
    if (info.status !== 0) {
      throw new Error(`the Docker Engine does not answer (docker info: ${info.stderr.trim()}); scripts/setup.sh starts dockerd`);
    }
    const built = buildSimImage({ log: () => undefined });
    image = built.id;
    dir = mkdtempSync(join(tmpdir(), "docker-cli-provider-"));
    modelDir = writeTestModel(join(dir, "model"));
    mkdirSync(join(dir, "runs"));
  });

  afterEach(removeAll);

  after(() => {
    if (dir === undefined) return;
    removeAll();
    rmSync(dir, { recursive: true, force: true });
    const left = containers();
    if (left.length > 0) throw new Error(`containers left behind: ${left.join(", ")}`);
  });

  it("starts the engine: /health answers, the labels are set, the API key travels only in the env file", async () => {
    const e = await engine("e1");
    const r = start(e);
    expect(r.status, r.stderr).to.equal(0);
    const out = lastJson(r.stdout);
    expect(out.containerId).to.match(/^[0-9a-f]{64}$/);
    expect(await httpStatus(`${e.plan.url}/health`)).to.equal(200);

    const [c] = JSON.parse(docker("inspect", String(out.containerId))) as Array<{
      Name: string; Path: string; Args: string[]; State: { StartedAt: string }; Image: string;
      Config: { Labels: Record<string, string>; Cmd: string[]; Entrypoint: string[] };
      Mounts: Array<{ Source: string; Destination: string; RW: boolean }>;
    }>;
    expect(c.Name).to.equal(`/narwhal-${STACK}-e1`);
    expect(c.Image).to.equal(image);
    expect(c.State.StartedAt).to.equal(out.startedAt);
    const token = readFileSync(join(e.runDir, "launch-token"), "utf8").trim();
    expect(token).to.match(/^[0-9a-f]{32}$/).and.equal(out.launchToken);
    expect(c.Config.Labels).to.include({
      [LABELS.stack]: STACK,
      [LABELS.engine]: "e1",
      [LABELS.planSha256]: e.plan.planSha256,
      [LABELS.launchToken]: token,
    });
    expect(c.Config.Labels[LABELS.specSha256]).to.match(/^sha256:[0-9a-f]{64}$/);
    expect(c.Mounts).to.deep.include({ ...c.Mounts.find((m) => m.Destination === "/model")!, Source: modelDir, RW: false });
    // The image's entrypoint is `vllm serve`; the container's arguments start with the mounted model.
    expect(c.Config.Entrypoint).to.deep.equal(["/usr/local/bin/vllm", "serve"]);
    expect(c.Config.Cmd[0]).to.equal("/model");

    // The key is nowhere on a command line: not the container's, not the client's, not the script's.
    for (const words of [c.Args, c.Config.Cmd, c.Config.Entrypoint, [c.Path]]) expect(words.join(" ")).not.to.include(API_KEY);
    expect(startScript(e.plan, e.target, e.opts)).not.to.include(API_KEY);
    expect(spawnSync("ps", ["-eo", "args"], { encoding: "utf8" }).stdout).not.to.include(API_KEY);
    // ...and yet it reached the engine, through the 0600 env file.
    const envPath = join(e.runDir, "container.env");
    expect(statSync(envPath).mode & 0o777).to.equal(0o600);
    expect(readFileSync(envPath, "utf8")).to.equal(`VLLM_API_KEY=${API_KEY}\n`);
    expect(await httpStatus(`${e.plan.url}/v1/models`)).to.equal(401);
    expect(await httpStatus(`${e.plan.url}/v1/models`, { Authorization: `Bearer ${API_KEY}` })).to.equal(200);
  });

  it("a second start adopts the running container and prints the same line", async () => {
    const e = await engine("e2");
    const first = start(e);
    expect(first.status, first.stderr).to.equal(0);
    const second = start(e);
    expect(second.status, second.stderr).to.equal(0);
    expect(second.stdout).to.equal(first.stdout);
    expect(second.stderr).to.include(`adopting running container ${String(lastJson(first.stdout).containerId)}`);
    expect(containers("e2")).to.deep.equal([lastJson(first.stdout).containerId]);
  });

  it("a docker run that hangs past the start deadline fails by name and leaves no orphan after reconcile", async () => {
    // The daemon creates and starts the container, but the client never returns.
    const hang = wrapper("docker-hangs-in-run", 'if [ "$1" = run ]; then docker "$@"; exec sleep 600; fi');
    const e = await engine("e3", { docker: hang, deadlines: { start: 4 } });
    const t0 = Date.now();
    const r = start(e);
    expect(r.status).to.equal(1);
    expect((Date.now() - t0) / 1000).to.be.lessThan(30);
    expect(r.stderr).to.include(`'docker run (container narwhal-${STACK}-e3)' did not finish within its deadline of 4s (runtime.deadlinesS.start)`);
    const token = readFileSync(join(e.runDir, "launch-token"), "utf8").trim();
    expect(token).to.match(/^[0-9a-f]{32}$/);
    expect(r.stderr).to.include(`removing the containers of launch token ${token}`);

    const rec = reconcile({ ...e, opts: { ...e.opts, dockerCommand: undefined } });
    expect(rec.status, rec.stderr).to.equal(0);
    expect(lastJson(rec.stdout)).to.include({ containerId: null });
    expect(containers("e3")).to.deep.equal([]);
    expect(await httpStatus(`${e.plan.url}/health`)).to.equal("refused");
  });

  it("a start killed mid-way is adopted by reconcile and the next start; a changed plan replaces it", async () => {
    // Startup takes 1 s × 5 of simulated model loading, so the kill lands in the health wait.
    const e = await engine("e4", { env: { NARWHAL_SIM_TIME_SCALE: "5" } });
    const child = spawn("bash", ["-c", startScript(e.plan, e.target, e.opts)], { detached: true, stdio: ["pipe", "ignore", "ignore"] });
    child.stdin.end(envFile({ VLLM_API_KEY: API_KEY }));
    const idFile = join(e.runDir, "container.id");
    for (let i = 0; i < 200 && !existsSync(idFile); i++) await new Promise((r) => setTimeout(r, 50));
    process.kill(-child.pid!, "SIGKILL"); // no trap runs: the container and the token file stay behind
    await new Promise((r) => child.once("exit", r));
    const cid = readFileSync(idFile, "utf8").trim();
    const token = readFileSync(join(e.runDir, "launch-token"), "utf8").trim();
    expect(containers("e4")).to.deep.equal([cid]);

    const rec = reconcile(e);
    expect(rec.status, rec.stderr).to.equal(0);
    expect(lastJson(rec.stdout)).to.include({ containerId: cid, launchToken: token });

    const again = start(e);
    expect(again.status, again.stderr).to.equal(0);
    expect(lastJson(again.stdout)).to.include({ containerId: cid, launchToken: token });
    expect(containers("e4")).to.deep.equal([cid]);

    // Another plan for the same engine: the old container is removed before the new one starts.
    const changed = { ...e, plan: renderLaunchPlan({ ...e.inputs, policy: { ...e.inputs.policy, maxNumSeqs: 4 } }) };
    const replaced = start(changed);
    expect(replaced.status, replaced.stderr).to.equal(0);
    expect(replaced.stderr).to.include(`removing container ${cid}`);
    const now = containers("e4");
    expect(now).to.have.length(1);
    expect(now[0]).not.to.equal(cid);
    expect(await httpStatus(`${e.plan.url}/health`)).to.equal(200);
  });

  it("reconcile removes this engine's containers that are stopped or run another plan", async () => {
    const e = await engine("e9");
    const first = start(e);
    expect(first.status, first.stderr).to.equal(0);
    const cid = String(lastJson(first.stdout).containerId);
    docker("stop", "-t", "10", cid);
    const rec = reconcile(e);
    expect(rec.status, rec.stderr).to.equal(0);
    expect(lastJson(rec.stdout)).to.deep.equal({ containerId: null, startedAt: null, launchToken: null, removed: [cid] });
    expect(containers("e9")).to.deep.equal([]);

    const second = start(e);
    expect(second.status, second.stderr).to.equal(0);
    const other = { ...e, plan: renderLaunchPlan({ ...e.inputs, policy: { ...e.inputs.policy, blockSize: 32 } }) };
    const rec2 = reconcile(other);
    expect(lastJson(rec2.stdout)).to.include({ containerId: null });
    expect(lastJson(rec2.stdout).removed).to.deep.equal([lastJson(second.stdout).containerId]);
    expect(containers("e9")).to.deep.equal([]);
  });

  it("a container that does not answer /health within the start deadline is removed, its log kept", async () => {
    const e = await engine("e5", { env: { NARWHAL_SIM_TIME_SCALE: "100" }, deadlines: { start: 3 } });
    const r = start(e);
    expect(r.status).to.equal(1);
    expect(r.stderr).to.match(/container [0-9a-f]{64} did not answer \/health within the start deadline of 3s \(runtime.deadlinesS.start\)/);
    expect(containers("e5")).to.deep.equal([]);
    expect(readFileSync(join(e.runDir, "engine.log"), "utf8")).to.include("vLLM API server version");
    // The removed container's whole log and inspect output are kept as the failed attempt; the start stopped it, so no exit status.
    const [kept] = parseKeptAttempts(sh(listAttemptsScript(e.runDir, "engine.log")).stdout);
    expect(kept).to.deep.include({ exitStatus: null });
    expect(kept.reason).to.match(/did not answer \/health within the start deadline of 3s/);
    expect(kept.logTail).to.include("vLLM API server version");
  });

  it("a container that exits before /health is reported with its log and removed", async () => {
    // The simulator refuses a --max-model-len above the model's max_position_embeddings (4096): exit 1.
    const e = await engine("e6", { model: { maxPositionEmbeddings: undefined }, policy: { maxModelLen: 65536 } });
    const r = start(e);
    expect(r.status).to.equal(1);
    expect(r.stderr).to.match(/container [0-9a-f]{64} is exited \(exit code 1\) before answering \/health/);
    expect(r.stderr).to.include("max_model_len");
    expect(containers("e6")).to.deep.equal([]);
    // Kept before the removal: docker logs, docker inspect, the container's exit code and the docker run it was.
    const attempts = join(e.runDir, "attempts");
    const [dirName, ...others] = readdirSync(attempts);
    expect(others).to.deep.equal([]);
    const kept = join(attempts, dirName);
    expect(r.stderr).to.include(`the failed attempt's evidence is kept in ${kept}`);
    expect(readFileSync(join(kept, "engine.log"), "utf8")).to.include("max_model_len");
    const inspect = JSON.parse(readFileSync(join(kept, "inspect.json"), "utf8")) as Array<{ State: { ExitCode: number }; Config: { Labels: Record<string, string> } }>;
    expect(inspect[0].State.ExitCode).to.equal(1);
    expect(inspect[0].Config.Labels[LABELS.engine]).to.equal("e6");
    expect(readFileSync(join(kept, "exit-status"), "utf8")).to.equal("1\n");
    expect(readFileSync(join(kept, "command"), "utf8")).to.match(/^docker run /).and.include("<launch token>").and.not.include(API_KEY);
    expect(readFileSync(join(kept, "reason"), "utf8")).to.match(/is exited \(exit code 1\) before answering \/health/);
    // A retry (here the stop a destroy runs) never removes the kept attempt.
    expect(stop(e).status).to.equal(0);
    expect(readdirSync(attempts)).to.deep.equal([dirName]);
  });

  it("refuses a wrong image ID, naming both IDs, and starts nothing", async () => {
    const wrong = `sha256:${"0".repeat(64)}`;
    const missing = await engine("e7", { image: wrong });
    const r1 = start(missing);
    expect(r1.status).to.equal(1);
    expect(r1.stderr).to.include(`runtime.image is ${wrong}, but the daemon has no such image`);

    // A daemon that resolves the configured reference to another image (here: the simulator's).
    const other = wrapper("docker-resolves-elsewhere", `if [ "$1 $2" = "image inspect" ]; then exec docker image inspect --format '{{.Id}}' ${image}; fi`);
    const resolved = await engine("e7", { image: wrong, docker: other });
    const r2 = start(resolved);
    expect(r2.status).to.equal(1);
    expect(r2.stderr).to.include(`image identity check failed: runtime.image is ${wrong}, but docker image inspect resolved it to ${image}`);
    expect(containers("e7")).to.deep.equal([]);
  });

  it("stop removes the container and the env file, and stopping again succeeds", async () => {
    const e = await engine("e8");
    expect(start(e).status).to.equal(0);
    const s = stop(e);
    expect(s.status, s.stderr).to.equal(0);
    expect(containers("e8")).to.deep.equal([]);
    expect(existsSync(join(e.runDir, "container.env"))).to.equal(false);
    expect(existsSync(join(e.runDir, "launch-token"))).to.equal(false);
    expect(await httpStatus(`${e.plan.url}/health`)).to.equal("refused");
    expect(stop(e).status).to.equal(0);
  });

  describe("a container the runbook's launcher runs for the engine", () => {
    /** `launch_engine prepare/check/start` of a container launch serving `e`'s plan (with `flags` changed). */
    function runbookContainer(e: Engine, flags: Record<string, string> = {}): { run: string; cid: string } {
      const run = join(dir, "runbook", e.plan.engineId);
      const launch = runbookPlan(e.plan, { backend: "container", image, flags });
      // The launcher binds containers to every address; here the engine stays on loopback (--host is not compared).
      const args = (launch.args as string[]).map((a, i, all) => (all[i - 1] === "--host" ? "127.0.0.1" : a));
      writeRunbookRun(run, { ...launch, args }, runbookEnv(e.plan, API_KEY));
      const owner = randomBytes(16).toString("hex");
      writeFileSync(join(run, "docker-owner.json"), JSON.stringify({ label: owner }), { mode: 0o600 });
      const cid = docker(
        "create", "--label", `io.narwhal.launch=${owner}`, "--label", `io.narwhal.operation=${randomBytes(16).toString("hex")}`,
        // Not the engine label: the program's reconcile must not see it; the stack label lets the hooks clean up.
        "--label", `${LABELS.stack}=${STACK}`,
        "--name", `narwhal-${e.plan.engineId}-${randomBytes(6).toString("hex")}`, "--network", "host", "--ipc", "host",
        "--env-file", join(run, "container.env"), "--mount", `type=bind,src=${modelDir},dst=/model,readonly`,
        "--entrypoint", "python3", image, ...args,
      );
      writeFileSync(join(run, "container.id"), `${cid}\n`, { mode: 0o600 });
      docker("start", cid);
      return { run, cid };
    }

    /** Retries: a pooled connection to the runbook's stopped engine fails the first request after it. */
    async function waitHealthy(url: string): Promise<void> {
      for (let i = 0; i < 200 && (await httpStatus(`${url}/health`)) !== 200; i++) await new Promise((r) => setTimeout(r, 150));
      expect(await httpStatus(`${url}/health`)).to.equal(200);
    }

    function survey(e: Engine, run: string): RunbookDecision {
      const r = sh(surveyScript({ run, envKeys: surveyEnvKeys(e.plan), inspectTimeoutS: 30 }));
      expect(r.status, r.stderr).to.equal(0);
      return decideRunbookAdoption({ plan: e.plan, image }, parseSurvey(r.stdout));
    }

    function takeover(d: RunbookDecision, run: string): RunbookContainerTakeover {
      if (d.action === "start" || !("containerId" in d.identity)) throw new Error(`expected a container to take over: ${d.reason}`);
      return { action: d.action, containerId: d.identity.containerId, run, runbookPlanSha256: d.action === "adopt" ? d.runbookPlanSha256 : undefined, reason: d.reason };
    }

    const startTakingOver = (e: Engine, t: RunbookContainerTakeover) => sh(startScript(e.plan, e.target, e.opts, t), envFile({ VLLM_API_KEY: API_KEY }));
    const running = (cid: string) => docker("inspect", "--format", "{{.State.Running}}", cid) === "true";

    it("adopts the container serving the program's plan and image: same container, no second one, stop removes it", async () => {
      const e = await engine("r1");
      const { run, cid } = runbookContainer(e);
      await waitHealthy(e.plan.url);
      const startedAt = docker("inspect", "--format", "{{.State.StartedAt}}", cid);

      const decision = survey(e, run);
      expect(decision.action, decision.reason).to.equal("adopt");
      // Discovery does not count the engine's listener on its planned port as someone else's.
      const listener = sh(`ss -Hltnp 'sport = :${e.inputs.engine.port}' | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u`).stdout.trim();
      expect(listener).to.match(/^\d+$/);
      expect(sh(runbookListenerPidsScript([run])).stdout.split("\n")).to.include(listener);
      expect(sh(runbookListenerPidsScript([join(dir, "runbook", "elsewhere")])).stdout.trim()).to.equal("");

      const r = startTakingOver(e, takeover(decision, run));
      expect(r.status, r.stderr).to.equal(0);
      expect(r.stderr).to.include(decision.reason);
      expect(lastJson(r.stdout)).to.deep.equal({ containerId: cid, startedAt, launchToken: "", adopted: { launcher: "runbook", run, planSha256: (decision as { runbookPlanSha256: string }).runbookPlanSha256 } });
      expect(containers("r1")).to.deep.equal([]);
      expect(running(cid)).to.equal(true);
      expect(await httpStatus(`${e.plan.url}/v1/models`, { Authorization: `Bearer ${API_KEY}` })).to.equal(200);
      // Run again (an interrupted create), it keeps the same container.
      const again = startTakingOver(e, takeover(decision, run));
      expect(again.status, again.stderr).to.equal(0);
      expect(lastJson(again.stdout).containerId).to.equal(cid);

      const s = stop(e);
      expect(s.status, s.stderr).to.equal(0);
      expect(docker("ps", "-aq", "--no-trunc", "--filter", `id=${cid}`)).to.equal("");
      expect(await httpStatus(`${e.plan.url}/health`)).to.equal("refused");
    });

    it("stops a container running another plan, naming the differing flag, and starts the program's own", async () => {
      const e = await engine("r2");
      const { run, cid } = runbookContainer(e, { "--max-num-seqs": "16" });
      await waitHealthy(e.plan.url);

      const decision = survey(e, run);
      expect(decision.action).to.equal("replace");
      expect(decision.reason).to.include("argv --max-num-seqs is 16 there, 8 here");
      const r = startTakingOver(e, takeover(decision, run));
      expect(r.status, r.stderr).to.equal(0);
      expect(r.stderr).to.include(decision.reason);
      // Stopped, not removed: its log stays with the runbook's records.
      expect(running(cid)).to.equal(false);
      const [own] = containers("r2");
      expect(lastJson(r.stdout)).to.include({ containerId: own });
      expect(lastJson(r.stdout)).not.to.have.property("adopted");
      await waitHealthy(e.plan.url);
    });

    it("starts the program's engine when the recorded container no longer runs, even after deciding to adopt it", async () => {
      const e = await engine("r3");
      const { run, cid } = runbookContainer(e);
      await waitHealthy(e.plan.url);
      const decided = survey(e, run);
      expect(decided.action).to.equal("adopt");
      docker("stop", "-t", "5", cid);
      expect(survey(e, run)).to.deep.equal({ action: "start", reason: `runbook launch ${run}: its container ${cid.slice(0, 12)} is not running; starting the program's engine` });

      // Stopped between the survey and the start: the start script looks again and starts its own.
      const r = startTakingOver(e, takeover(decided, run));
      expect(r.status, r.stderr).to.equal(0);
      expect(r.stderr).to.include(`the runbook's container ${cid} is no longer running; starting the program's engine`);
      expect(lastJson(r.stdout).containerId).to.equal(containers("r3")[0]);
      await waitHealthy(e.plan.url);
    });
  });
});
