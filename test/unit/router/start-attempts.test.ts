/** The router's start script, run for real under sh with a stand-in narwhal-serve that fails: its log is kept per attempt. */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { routerStartScript, routerStopScript, type RouterOptions } from "../../../lib/router/serve";
import { listAttemptsScript, parseKeptAttempts } from "../../../lib/runtime/attempts";

function sh(script: string, stdin = ""): { code: number; stdout: string; stderr: string } {
  try {
    return { code: 0, stdout: execFileSync("sh", ["-c", script], { input: stdin, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"] }), stderr: "" };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    return { code: e.status, stdout: e.stdout, stderr: e.stderr };
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

describe("router start: a failed start's log is kept per attempt", function () {
  this.timeout(30_000);
  let dir: string;
  let options: RouterOptions;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "router-attempt-"));
    fs.mkdirSync(path.join(dir, "bin"));
    options = {
      runDir: path.join(dir, "run"),
      binDir: path.join(dir, "bin"),
      bindAddress: "127.0.0.1",
      port: await freePort(),
      backendPort: await freePort(),
      fleetDocument: JSON.stringify({ fleet: { profiles: { path: "profiles.json" } } }),
      startTimeoutS: 10,
      stopTimeoutS: 5,
    };
  });
  afterEach(() => {
    sh(routerStopScript(options));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const serve = (body: string) => {
    fs.writeFileSync(path.join(dir, "bin", "narwhal-serve"), `#!/bin/sh\n${body}\n`);
    fs.chmodSync(path.join(dir, "bin", "narwhal-serve"), 0o755);
  };

  it("keeps router.log, the exit status and the command line; a second failure keeps its own beside it", () => {
    serve("echo 'fleet.json: engine p0 has no profile' >&2; exit 2");
    const first = sh(routerStartScript(options), "NARWHAL_ENGINE_API_KEY='k'\n");
    expect(first.code).to.equal(1);
    expect(first.stderr).to.include("router exited (status 2) before /health reported ready");
    serve("echo 'second try: port in use' >&2; exit 3");
    const second = sh(routerStartScript(options), "NARWHAL_ENGINE_API_KEY='k'\n");
    expect(second.code).to.equal(1);
    const kept = parseKeptAttempts(sh(listAttemptsScript(options.runDir, "router.log")).stdout);
    expect(kept.map((a) => [a.exitStatus, a.logTail, a.reason])).to.have.deep.members([
      [2, "fleet.json: engine p0 has no profile", "router exited before /health reported ready"],
      [3, "second try: port in use", "router exited before /health reported ready"],
    ]);
    expect(kept[0].command).to.equal(`'${options.binDir}/narwhal-serve' '--fleet' 'fleet.json' '--host' '127.0.0.1' '--port' '${options.backendPort}'`);
    expect(fs.existsSync(path.join(options.runDir, "router.log"))).to.equal(false);
  });
});
