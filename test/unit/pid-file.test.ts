import { expect } from "chai";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PID_FILE_SH, stopPidFileLines } from "../../lib/pid-file";
import { FRESHNESS_EXPORTER_PY } from "../../lib/observability/freshness-exporter";
import { shq } from "../../lib/shell";
import { pidAlive } from "../../sim/hosts/exec";

/** Runs the script under POSIX sh (dash on Debian), as a remote command does. */
function sh(script: string): { code: number; stdout: string; stderr: string } {
  const r = spawnSync("sh", ["-c", `${PID_FILE_SH}${script}`], { encoding: "utf8", timeout: 30_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A process in a group of its own, as the program's services run. */
function startLeader(): ChildProcess {
  return spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
}

async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise((r) => child.once("exit", r));
}

describe("pid files that name their process and nobody else", () => {
  let dir: string;
  let pidFile: string;
  const children: ChildProcess[] = [];
  const leader = () => {
    const c = startLeader();
    children.push(c);
    return c;
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "pid-file-"));
    pidFile = path.join(dir, "pid");
  });
  afterEach(() => {
    for (const c of children.splice(0)) c.kill("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("names the process it recorded while that process runs, and nobody once it is gone", async () => {
    const a = leader();
    expect(sh(`record_pid ${a.pid} ${shq(pidFile)}`).code).to.equal(0);
    expect(sh(`live_pid ${shq(pidFile)}`)).to.deep.include({ code: 0, stdout: `${a.pid}\n` });
    a.kill("SIGKILL");
    await exited(a);
    expect(sh(`live_pid ${shq(pidFile)}`)).to.deep.include({ code: 1, stdout: "" });
  });

  it("does not name a process that got the same number later (a recycled pid): stop leaves it alone", () => {
    // The kernel gives a dead process's number to the next process that needs one. What the file then
    // says: the number, recorded with the dead process's start tick, and the number now runs a stranger.
    const stranger = leader();
    const bootId = fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    fs.writeFileSync(`${pidFile}.start`, `${stranger.pid} ${bootId} 1\n`);
    fs.writeFileSync(pidFile, `${stranger.pid}\n`);

    expect(sh(`live_pid ${shq(pidFile)}`).code).to.equal(1);
    const stop = sh(stopPidFileLines("router", shq(pidFile), 2));
    expect(stop.code, stop.stderr).to.equal(0);
    expect(pidAlive(stranger.pid!), "the stranger still runs").to.equal(true);
  });

  it("does not name a process of another boot (a pid file left by a reboot)", () => {
    const a = leader();
    sh(`record_pid ${a.pid} ${shq(pidFile)}`);
    const [pid, , tick] = fs.readFileSync(`${pidFile}.start`, "utf8").trim().split(" ");
    fs.writeFileSync(`${pidFile}.start`, `${pid} 00000000-0000-0000-0000-000000000000 ${tick}\n`);
    expect(sh(`live_pid ${shq(pidFile)}`).code).to.equal(1);
  });

  it("does not name a zombie, whose process is over though its parent has not reaped it", () => {
    // sh forks `sleep 0` and then sleeps itself without waiting: the child stays a zombie meanwhile.
    const r = spawnSync("sh", ["-c", `${PID_FILE_SH}sleep 0 & z=$!; record_pid $z ${shq(pidFile)}; sleep 0.5; live_pid ${shq(pidFile)}; echo "live=$?"`], { encoding: "utf8" });
    expect(r.stdout).to.equal("live=1\n");
  });

  it("trusts a pid file its companion does not describe while that pid is alive: an older version's, or an operator's restart", async () => {
    const a = leader();
    fs.writeFileSync(pidFile, `${a.pid}\n`);
    expect(sh(`live_pid ${shq(pidFile)}`)).to.deep.include({ code: 0, stdout: `${a.pid}\n` });

    // Restarted by hand: the operator's tooling wrote the new pid over the program's record.
    sh(`record_pid ${a.pid} ${shq(pidFile)}`);
    a.kill("SIGKILL");
    await exited(a);
    const b = leader();
    fs.writeFileSync(pidFile, `${b.pid}\n`);
    expect(sh(`live_pid ${shq(pidFile)}`)).to.deep.include({ code: 0, stdout: `${b.pid}\n` });
  });

  it("stops the whole group it names, within the named bound, and says when SIGKILL was needed", async () => {
    const stubborn = spawn("sh", ["-c", "trap '' TERM; sleep 300 & wait"], { detached: true, stdio: "ignore" });
    children.push(stubborn);
    sh(`record_pid ${stubborn.pid} ${shq(pidFile)}`);
    const stop = sh(stopPidFileLines("engine e1", shq(pidFile), 1));
    expect(stop.code).to.equal(0);
    expect(stop.stderr).to.equal("engine e1 ignored SIGTERM for 1s; sending SIGKILL\n");
    await exited(stubborn);
    expect(pidAlive(stubborn.pid!)).to.equal(false);
  });
});

describe("the freshness exporter reads pid files by the same rule", () => {
  /** Runs the exporter's own live_pid (lib/observability/freshness-exporter.ts) on a pid file. */
  function exporterLivePid(pidFile: string): string {
    const r = spawnSync("python3", ["-c", "import sys; ns = {'__name__': 'check'}; exec(sys.stdin.read(), ns); print(ns['live_pid'](sys.argv[1]))", pidFile], {
      input: FRESHNESS_EXPORTER_PY,
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(r.status, r.stderr).to.equal(0);
    return r.stdout.trim();
  }

  it("names the recorded process, and nobody for a recycled number or a record of another boot", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pid-file-exporter-"));
    const pidFile = path.join(dir, "pid");
    const child = startLeader();
    try {
      sh(`record_pid ${child.pid} ${shq(pidFile)}`);
      expect(exporterLivePid(pidFile)).to.equal(String(child.pid));
      const [pid, bootId] = fs.readFileSync(`${pidFile}.start`, "utf8").trim().split(" ");
      fs.writeFileSync(`${pidFile}.start`, `${pid} ${bootId} 1\n`);
      expect(exporterLivePid(pidFile), "a recycled number").to.equal("None");
      fs.writeFileSync(`${pidFile}.start`, `${pid} 00000000-0000-0000-0000-000000000000 1\n`);
      expect(exporterLivePid(pidFile), "another boot").to.equal("None");
      fs.rmSync(`${pidFile}.start`);
      expect(exporterLivePid(pidFile), "a pid file with no record, its process alive").to.equal(String(child.pid));
    } finally {
      child.kill("SIGKILL");
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
