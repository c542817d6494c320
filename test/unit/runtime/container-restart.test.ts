import { expect } from "chai";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import type { AddressInfo } from "node:net";
import type { LaunchPlan } from "../../../lib/launch/plan";
import { containerRestartScript } from "../../../lib/runtime/restart";
import { listAttemptsScript, parseKeptAttempts } from "../../../lib/runtime/attempts";

/**
 * A docker client that records its argv: `restart` exits RESTART_RC; `inspect --format` answers the
 * running flag (STATE), the status and exit code (STATUS) or the run's start (STARTED); `logs` prints
 * which window it was asked for, so the test can tell `--since` from the whole log.
 */
const DOCKER = `#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls"
case "$1" in
  restart) exit "\${RESTART_RC:-0}" ;;
  logs) [ "$2" = --since ] && echo "run log since $3" || echo "whole log"; echo "CUDA out of memory" ;;
  inspect)
    if [ "$2" = --format ]; then
      case "$3" in
        *Running*) echo "$STATE" ;;
        *Status*) echo "$STATUS" ;;
        *StartedAt*) echo "$STARTED" ;;
      esac
    else
      echo '[{"Id":"inspected"}]'
    fi ;;
  *) exit 2 ;;
esac
`;

function sh(script: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("sh", ["-c", script], { env: { ...process.env, STATUS: "exited 3", STARTED: "2026-01-01T00:00:01.5Z", ...env } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("container restart script (run for real under sh)", function () {
  let dir: string;
  let runDir: string;
  let server: http.Server;
  let plan: LaunchPlan;
  let healthy: boolean;
  const id = "0123456789ab".repeat(2);
  const restart = (health = 5) => containerRestartScript(plan, path.join(dir, "docker"), id, { stop: 7, health }, { runDir, inspectS: 5 });
  const attempts = () => path.join(runDir, "attempts");
  const listed = async () => parseKeptAttempts((await sh(listAttemptsScript(runDir, "engine.log"), {})).stdout);

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "container-restart-"));
    runDir = path.join(dir, "engines", "e3");
    fs.writeFileSync(path.join(dir, "docker"), DOCKER, { mode: 0o755 });
    healthy = true;
    server = http.createServer((req, res) => res.writeHead(req.url === "/health" && healthy ? 200 : 503).end()).listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    const port = (server.address() as AddressInfo).port;
    plan = { engineId: "e3", argv: [], env: {}, url: `http://127.0.0.1:${port}`, tensorParallelSize: 1, maxModelLen: 1024, planSha256: "sha256:" + "c".repeat(64) } as unknown as LaunchPlan;
  });
  afterEach(() => {
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("restarts the container by id with the stop deadline, then waits for /health, keeping nothing", async () => {
    const r = await sh(restart(), { STATE: "true" });
    expect(r.code, r.stderr).to.equal(0);
    expect(fs.readFileSync(path.join(dir, "calls"), "utf8").split("\n")[0]).to.equal(`restart --time 7 ${id}`);
    expect(fs.existsSync(attempts())).to.equal(false);
  });

  it("keeps the failed restart's log since it began, its inspect and exit code, when the container stops before /health", async () => {
    healthy = false;
    const r = await sh(restart(), { STATE: "false" });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include("engine e3 exited after its restart, before answering /health");
    const [kept, ...others] = fs.readdirSync(attempts());
    expect(others).to.deep.equal([]);
    const keptDir = path.join(attempts(), kept);
    expect(r.stderr).to.include(`the failed attempt's evidence is kept in ${keptDir}`);
    const started = fs.readFileSync(path.join(keptDir, "started-at"), "utf8").trim();
    // Only this run's lines: the container's log also holds every earlier run's.
    expect(fs.readFileSync(path.join(keptDir, "engine.log"), "utf8")).to.equal(`run log since ${started}\nCUDA out of memory\n`);
    expect(fs.readFileSync(path.join(keptDir, "inspect.json"), "utf8")).to.equal('[{"Id":"inspected"}]\n');
    expect(fs.readFileSync(path.join(keptDir, "container-run"), "utf8")).to.equal(`${id} 2026-01-01T00:00:01.5Z\n`);
    const [one] = await listed();
    expect(one).to.deep.include({ id: kept, exitStatus: 3, reason: "engine e3 exited after its restart, before answering /health", logTail: `run log since ${started}\nCUDA out of memory` });
    expect(one.command).to.equal(`${path.join(dir, "docker")} restart --time 7 ${id}`);
    expect((fs.statSync(runDir).mode & 0o777).toString(8)).to.equal("700");
  });

  it("keeps a late restart with no exit status (the container still runs), within the named health timeout", async () => {
    healthy = false;
    const r = await sh(restart(1), { STATE: "true", STATUS: "running 0" });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include("engine e3 did not answer /health within health timeout 1s of its restart");
    const [one] = await listed();
    expect(one).to.deep.include({ exitStatus: null, reason: "engine e3 did not answer /health within health timeout 1s of its restart" });
  });

  it("keeps a refused docker restart too", async () => {
    const r = await sh(restart(), { STATE: "true", RESTART_RC: "1", STATUS: "exited 137" });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include(`engine e3: docker restart of container ${id} failed (exit 1)`);
    const [one] = await listed();
    expect(one).to.deep.include({ exitStatus: 137, reason: "engine e3: docker restart failed" });
  });

  it("never overwrites or removes a kept restart: the wave's next failed restart is kept beside it, a good one leaves both", async () => {
    healthy = false;
    expect((await sh(restart(), { STATE: "false" })).code).to.equal(1);
    const [first] = fs.readdirSync(attempts());
    const firstLog = fs.readFileSync(path.join(attempts(), first, "engine.log"), "utf8");
    expect((await sh(restart(), { STATE: "false", STARTED: "2026-01-01T00:05:00Z", STATUS: "exited 4" })).code).to.equal(1);
    healthy = true;
    expect((await sh(restart(), { STATE: "true" })).code).to.equal(0);
    const kept = fs.readdirSync(attempts()).sort();
    expect(kept).to.have.length(2).and.include(first);
    expect(fs.readFileSync(path.join(attempts(), first, "engine.log"), "utf8")).to.equal(firstLog);
    expect((await listed()).map((a) => a.exitStatus).sort()).to.deep.equal([3, 4]);
  });
});
