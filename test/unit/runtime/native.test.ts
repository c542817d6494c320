import { expect } from "chai";
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import type { LaunchPlan } from "../../../lib/launch/plan";
import { launchCommandLine, startScript, stopScript } from "../../../lib/runtime/native";
import { nativeRestartScript } from "../../../lib/runtime/restart";
import { listAttemptsScript, parseKeptAttempts } from "../../../lib/runtime/attempts";
import { writeTestModel } from "../../../sim/engine/testing-model";
import { pidAlive } from "../../../sim/hosts/exec";

/** A stand-in engine: answers /health and keeps a child, so stopping must take the whole group. */
const FAKE_ENGINE = `
import http.server, os, subprocess, sys
subprocess.Popen(["sleep", "300"])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404); self.end_headers()
    def log_message(self, *a): pass
print("key=" + os.environ.get("VLLM_API_KEY", ""), "mode=" + os.environ.get("MODE", ""), flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
`;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Runs a script the way a remote command does: POSIX sh (dash on Debian), stdin as given. */
function sh(script: string, stdin = ""): { code: number; stdout: string; stderr: string } {
  try {
    const stdout = execFileSync("sh", ["-c", script], { input: stdin, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"] });
    return { code: 0, stdout, stderr: "" };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    return { code: e.status, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("native runtime scripts (run for real under sh)", function () {
  let dir: string;
  let plan: LaunchPlan;
  const opts = () => ({ runDir: path.join(dir, "run"), healthTimeoutS: 10, stopTimeoutS: 5 });

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "native-"));
    fs.writeFileSync(path.join(dir, "engine.py"), FAKE_ENGINE);
    const port = await freePort();
    plan = {
      engineId: "e1",
      argv: ["python3", path.join(dir, "engine.py"), String(port)],
      env: { MODE: "it's quoted" },
      url: `http://127.0.0.1:${port}`,
      tensorParallelSize: 1,
      maxModelLen: 1024,
      planSha256: "sha256:" + "a".repeat(64),
      dsRequired: false,
      placement: { gpuIds: [], gpuIdsNamed: false, vendor: "none", visibilityVariable: "CUDA_VISIBLE_DEVICES", transport: "tcp", rdmaDevices: [], renderNodes: [] },
    };
  });
  afterEach(() => {
    sh(stopScript(plan, opts()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("starts detached, waits for /health, and passes the key only through the private env file", () => {
    const r = sh(startScript(plan, opts()), "VLLM_API_KEY='k3y'\n");
    expect(r.code, r.stderr).to.equal(0);
    const started = JSON.parse(r.stdout.trim()) as { pid: number };
    expect(fs.readFileSync(`/proc/${started.pid}/cmdline`, "utf8")).to.not.include("k3y");
    expect(fs.statSync(path.join(opts().runDir, "engine.env")).mode & 0o777).to.equal(0o600);
    expect(fs.readFileSync(path.join(opts().runDir, "engine.log"), "utf8")).to.include("key=k3y mode=it's quoted");
  });

  it("adopts its own live process on a second run instead of starting another", () => {
    const first = sh(startScript(plan, opts()), "VLLM_API_KEY='k'\n");
    const second = sh(startScript(plan, opts()), "VLLM_API_KEY='k'\n");
    expect(second.code, second.stderr).to.equal(0);
    expect(second.stdout).to.equal(first.stdout);
  });

  it("adopts an engine an earlier version started, whose pid file has no start record: an upgrade restarts nothing", () => {
    const first = sh(startScript(plan, opts()), "VLLM_API_KEY='k'\n");
    fs.rmSync(path.join(opts().runDir, "pid.start"));
    const again = sh(startScript(plan, opts()), "VLLM_API_KEY='k'\n");
    expect(again.code, again.stderr).to.equal(0);
    expect(again.stdout).to.equal(first.stdout);
  });

  it("refuses to start over a live process that runs another plan", () => {
    sh(startScript(plan, opts()), "VLLM_API_KEY='k'\n");
    const other = { ...plan, planSha256: "sha256:" + "b".repeat(64) };
    const r = sh(startScript(other, opts()), "VLLM_API_KEY='k'\n");
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/^engine e1: pid \d+ already runs another launch plan in .*; stop it first/);
  });

  it("stops the whole process group and removes the key file", () => {
    const { pid } = JSON.parse(sh(startScript(plan, opts()), "VLLM_API_KEY='k'\n").stdout.trim()) as { pid: number };
    const group = execFileSync("pgrep", ["-g", String(pid)], { encoding: "utf8" }).trim().split("\n");
    expect(group.length).to.be.greaterThan(1);
    expect(sh(stopScript(plan, opts())).code).to.equal(0);
    for (const p of group) expect(pidAlive(Number(p)), `pid ${p}`).to.equal(false);
    expect(fs.existsSync(path.join(opts().runDir, "engine.env"))).to.equal(false);
    expect(sh(stopScript(plan, opts())).code, "stopping twice").to.equal(0);
  });

  it("after a reboot, a pid file naming another process neither blocks the start nor gets that process stopped", async () => {
    // The files a reboot leaves, their number since handed to a stranger: the record names another boot.
    const stranger = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
    try {
      fs.mkdirSync(opts().runDir, { recursive: true });
      fs.writeFileSync(path.join(opts().runDir, "pid"), `${stranger.pid}\n`);
      fs.writeFileSync(path.join(opts().runDir, "pid.start"), `${stranger.pid} 00000000-0000-0000-0000-000000000000 1\n`);
      fs.writeFileSync(path.join(opts().runDir, "plan.sha256"), `${plan.planSha256}\n`);
      const r = sh(startScript(plan, opts()), "VLLM_API_KEY='k'\n");
      expect(r.code, r.stderr).to.equal(0);
      const { pid } = JSON.parse(r.stdout.trim()) as { pid: number };
      expect(pid).to.not.equal(stranger.pid);
      expect(sh(stopScript(plan, opts())).code).to.equal(0);
      expect(pidAlive(pid), "the engine stopped").to.equal(false);
      expect(pidAlive(stranger.pid!), "the stranger still runs").to.equal(true);
    } finally {
      stranger.kill("SIGKILL");
    }
  });

  it("names the recovery when vLLM refuses the checkpoint at startup (custom code discovery did not record)", () => {
    const model = writeTestModel(path.join(dir, "model"), { config: { auto_map: { AutoModelForCausalLM: "modeling_x.X" } } });
    const root = path.resolve(__dirname, "..", "..", "..");
    const engine = {
      ...plan,
      argv: [process.execPath, "-r", path.join(root, "tools/ts-require.js"), path.join(root, "sim/engine/main.ts"), "serve", model, "--port", plan.url.split(":").pop()!],
      env: {},
    };
    const r = sh(startScript(engine, opts()), "VLLM_API_KEY='k'\n");
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include("trust_remote_code=True");
    expect(r.stderr).to.include("hint: the checkpoint needs custom code (auto_map) that discovery did not record: re-run discovery (pulumi up --refresh)");
  });

  it("keeps a failed start's log, exit status and command line per attempt; the retry writes a fresh log and lists the kept one", () => {
    const failing = { ...plan, argv: ["sh", "-c", "echo 'CUDA out of memory on rank 0'; exit 3"] };
    const failed = sh(startScript(failing, opts()), "VLLM_API_KEY='k'\n");
    expect(failed.code).to.equal(1);
    expect(failed.stderr).to.include("engine e1 exited (status 3) before answering /health");
    const attempts = path.join(opts().runDir, "attempts");
    const [kept, ...others] = fs.readdirSync(attempts);
    expect(others).to.deep.equal([]);
    const keptDir = path.join(attempts, kept);
    expect(fs.readFileSync(path.join(keptDir, "engine.log"), "utf8")).to.equal("CUDA out of memory on rank 0\n");
    expect(fs.readFileSync(path.join(keptDir, "exit-status"), "utf8")).to.equal("3\n");
    expect(fs.readFileSync(path.join(keptDir, "command"), "utf8")).to.equal(`${launchCommandLine(failing)}\n`).and.include("exit 3").and.not.include("VLLM_API_KEY");
    expect(failed.stderr).to.include(`the failed attempt's evidence is kept in ${keptDir}`);
    // The retry (the plan as it should be) starts, and the failed attempt stays as it was.
    const retried = sh(startScript(plan, opts()), "VLLM_API_KEY='k'\n");
    expect(retried.code, retried.stderr).to.equal(0);
    expect(fs.readFileSync(path.join(keptDir, "engine.log"), "utf8")).to.equal("CUDA out of memory on rank 0\n");
    expect(fs.readFileSync(path.join(opts().runDir, "engine.log"), "utf8")).to.not.include("CUDA out of memory");
    // A stop (the destroy, a replacement) removes what the start made, never the kept attempt.
    sh(stopScript(plan, opts()));
    expect(fs.readdirSync(attempts)).to.deep.equal([kept]);
    const listed = parseKeptAttempts(sh(listAttemptsScript(opts().runDir, "engine.log")).stdout);
    expect(listed).to.have.length(1);
    expect(listed[0]).to.deep.include({ id: kept, exitStatus: 3, reason: "engine e1 exited before answering /health", logTail: "CUDA out of memory on rank 0" });
    expect(listed[0].command).to.equal(launchCommandLine(failing));
  });

  it("gives up on an engine that never answers, within the named health timeout, and leaves nothing", () => {
    const silent = { ...plan, argv: ["sleep", "300"] };
    const r = sh(startScript(silent, { ...opts(), healthTimeoutS: 2 }), "VLLM_API_KEY='k'\n");
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include("engine e1 did not answer /health within health timeout 2s; stopped it.");
    expect(fs.existsSync(path.join(opts().runDir, "pid"))).to.equal(false);
    // Its log is kept with no exit status: the start stopped it.
    const [kept] = parseKeptAttempts(sh(listAttemptsScript(opts().runDir, "engine.log")).stdout);
    expect(kept).to.deep.include({ exitStatus: null, reason: "engine e1 did not answer /health within health timeout 2s; stopped it" });
  });

  it("restarts in place for a peer wave: the old group gone, the same plan and key in a new one, /health waited for", () => {
    const { pid } = JSON.parse(sh(startScript(plan, opts()), "VLLM_API_KEY='k3y'\n").stdout.trim()) as { pid: number };
    const group = execFileSync("pgrep", ["-g", String(pid)], { encoding: "utf8" }).trim().split("\n");
    const r = sh(nativeRestartScript(plan, opts().runDir, { stop: 5, health: 10 }));
    expect(r.code, r.stderr).to.equal(0);
    const restarted = JSON.parse(r.stdout.trim()) as { pid: number };
    expect(restarted.pid).to.not.equal(pid);
    for (const p of group) expect(pidAlive(Number(p)), `old pid ${p}`).to.equal(false);
    expect(fs.readFileSync(path.join(opts().runDir, "pid"), "utf8").trim()).to.equal(String(restarted.pid));
    expect(fs.readFileSync(path.join(opts().runDir, "engine.log"), "utf8")).to.include("key=k3y mode=it's quoted");
    expect(fs.readFileSync(`/proc/${restarted.pid}/cmdline`, "utf8")).to.not.include("k3y");
    // The start's own adoption still recognises the restarted process as this plan's.
    expect(sh(startScript(plan, opts()), "VLLM_API_KEY='k3y'\n").stdout.trim()).to.equal(r.stdout.trim());
  });

  it("refuses to restart an engine that was never started, naming it and what to do", () => {
    const r = sh(nativeRestartScript(plan, opts().runDir, { stop: 5, health: 10 }));
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/^engine e1: nothing to restart in .*\/run \(no pid or env file\); run pulumi up to start it/);
  });

  describe("engines that share a GPU", () => {
    /** A second engine of the same stack (a sibling run folder) on GPU 0, as after a reallocation. */
    async function neighbour(): Promise<{ plan: LaunchPlan; opts: ReturnType<typeof opts> }> {
      const port = await freePort();
      return {
        plan: { ...plan, engineId: "e2", argv: ["python3", path.join(dir, "engine.py"), String(port)], url: `http://127.0.0.1:${port}`, env: { CUDA_VISIBLE_DEVICES: "0" }, placement: onGpuIds([0]) },
        opts: { ...opts(), runDir: path.join(dir, "e2") },
      };
    }
    const onGpuIds = (gpuIds: number[]): LaunchPlan["placement"] => ({ ...plan.placement, gpuIds, vendor: "nvidia" });
    const onGpus = (visible: string) => ({ ...plan, env: { ...plan.env, CUDA_VISIBLE_DEVICES: visible }, placement: onGpuIds(visible.split(",").map(Number)) });

    it("waits for the engine that still holds the GPU to stop, then starts", async () => {
      const holder = await neighbour();
      expect(sh(startScript(holder.plan, holder.opts), "VLLM_API_KEY='k'\n").code).to.equal(0);
      // The holder stops a moment later, as a replaced engine's delete would.
      const stopper = path.join(dir, "stop-e2.sh");
      fs.writeFileSync(stopper, stopScript(holder.plan, holder.opts));
      spawn("sh", ["-c", `sleep 2; sh ${stopper}`], { stdio: "ignore", detached: true }).unref();
      const t0 = Date.now();
      const r = sh(startScript(onGpus("1,0"), opts()), "VLLM_API_KEY='k'\n");
      expect(r.code, r.stderr).to.equal(0);
      expect(Date.now() - t0, "started only after the holder stopped").to.be.greaterThan(1500);
      expect(fs.readFileSync(path.join(opts().runDir, "gpus"), "utf8").trim()).to.equal("1 0");
    });

    it("starts at once beside an engine on other GPUs", async () => {
      const other = await neighbour();
      expect(sh(startScript(other.plan, other.opts), "VLLM_API_KEY='k'\n").code).to.equal(0);
      try {
        const t0 = Date.now();
        expect(sh(startScript(onGpus("1"), opts()), "VLLM_API_KEY='k'\n").code).to.equal(0);
        expect(Date.now() - t0).to.be.lessThan(5000);
      } finally {
        sh(stopScript(other.plan, other.opts));
      }
    });

    it("ignores a claim made on another machine (run folders on a shared filesystem)", () => {
      const elsewhere = path.join(dir, "e9");
      fs.mkdirSync(elsewhere);
      fs.writeFileSync(path.join(elsewhere, "pid"), `${process.pid}\n`);
      fs.writeFileSync(path.join(elsewhere, "gpus"), " 0 \n");
      fs.writeFileSync(path.join(elsewhere, "machine"), "another-machine-id\n");
      const r = sh(startScript(onGpus("0"), { ...opts(), gpuWaitS: 1 }), "VLLM_API_KEY='k'\n");
      expect(r.code, r.stderr).to.equal(0);
    });

    it("gives up within the named GPU wait, naming the engine that holds it", async () => {
      const holder = await neighbour();
      expect(sh(startScript(holder.plan, holder.opts), "VLLM_API_KEY='k'\n").code).to.equal(0);
      try {
        const r = sh(startScript(onGpus("0"), { ...opts(), gpuWaitS: 1 }), "VLLM_API_KEY='k'\n");
        expect(r.code).to.equal(1);
        expect(r.stderr).to.match(/^engine e1: GPU wait deadline 1s passed and engine e2 \(pid \d+\) holds GPU 0; stop that engine or give the engines disjoint engines\[\]\.gpuIds/);
        expect(fs.existsSync(path.join(opts().runDir, "pid")), "nothing started").to.equal(false);
      } finally {
        sh(stopScript(holder.plan, holder.opts));
      }
    });
  });
});
