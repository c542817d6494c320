import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { once } from "node:events";
import { expect } from "chai";

const ROOT = path.resolve(__dirname, "..", "..", "..");
const HOLDER_READY_TIMEOUT_MS = 10_000;
const REFUSAL_TIMEOUT_MS = 30_000;

/** scripts/test.sh's environment as a fresh shell gives it: not inside a suite that holds the lock. */
function freshEnv(lock: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NARWHAL_SIM_HOSTS_LOCK: lock, NARWHAL_SIM_HOSTS_LOCK_WAIT_S: "1" };
  delete env.NARWHAL_SIM_HOSTS_LOCKED;
  return env;
}

describe("scripts/test.sh: one suite at a time has the simulated hosts", () => {
  let dir: string;
  let holder: ChildProcess | undefined;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sim-hosts-lock-"));
  });

  afterEach(() => {
    if (holder?.pid !== undefined) process.kill(-holder.pid, "SIGKILL");
    holder = undefined;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("waits its bound for another suite's lock, then stops naming the holder and what to do, before any setup", async function () {
    this.timeout(HOLDER_READY_TIMEOUT_MS + REFUSAL_TIMEOUT_MS);
    const lock = path.join(dir, "sim-hosts.lock");
    fs.writeFileSync(`${lock}.holder`, "pid 4242, layer e2e, in /elsewhere\n");
    holder = spawn("flock", [lock, "-c", "echo held; exec sleep 300"], { detached: true, stdio: ["ignore", "pipe", "ignore"] });
    const [line] = (await Promise.race([
      once(holder.stdout!, "data"),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`HOLDER_READY_TIMEOUT_MS=${HOLDER_READY_TIMEOUT_MS}: flock never took the lock`)), HOLDER_READY_TIMEOUT_MS)),
    ])) as [Buffer];
    expect(line.toString()).to.equal("held\n");

    const r = spawnSync("bash", ["scripts/test.sh", "e2e"], { cwd: ROOT, env: freshEnv(lock), encoding: "utf8", timeout: REFUSAL_TIMEOUT_MS });
    expect(r.status, r.stderr).to.equal(75);
    expect(r.stderr).to.include("another suite on this machine has the simulated hosts (pid 4242, layer e2e, in /elsewhere); waiting up to 1 s");
    expect(r.stderr).to.include("the simulated hosts were still held after 1 s by pid 4242, layer e2e, in /elsewhere; let that run finish or stop it, then run again");
    expect(r.stdout, "setup ran before the lock was taken").to.not.include("==>");
  });

  it("refuses an unknown layer before waiting for anything", () => {
    const r = spawnSync("bash", ["scripts/test.sh", "e2ee"], { cwd: ROOT, env: freshEnv(path.join(dir, "unused.lock")), encoding: "utf8", timeout: REFUSAL_TIMEOUT_MS });
    expect(r.status).to.equal(2);
    expect(r.stderr).to.equal("usage: scripts/test.sh [unit|mocks|providers|e2e|all]\n");
  });
});
