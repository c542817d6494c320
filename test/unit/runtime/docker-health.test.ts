import { expect } from "chai";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import type { AddressInfo } from "node:net";
import type { LaunchPlan } from "../../../lib/launch/plan";
import { dockerHealthWaitScript } from "../../../lib/runtime/docker-health";
import { listAttemptsScript, parseKeptAttempts } from "../../../lib/runtime/attempts";

/** A docker client: `inspect --format` answers the state (STATUS: "running 0", "exited 3") and the run's start; `logs` the whole log. */
const DOCKER = `#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls"
case "$1" in
  logs) echo "whole log of $*"; echo "ValueError: bad --max-model-len" ;;
  inspect)
    if [ "$2" = --format ]; then
      case "$3" in
        *StartedAt*) echo "2026-01-01T00:00:01.5Z" ;;
        *"(exit code"*) set -- $STATUS; echo "$1 (exit code $2)" ;;
        *Status*) echo "$STATUS" ;;
      esac
    else
      echo '[{"Id":"inspected"}]'
    fi ;;
  *) exit 2 ;;
esac
`;

function sh(script: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("sh", ["-c", script], { env: { ...process.env, ...env } }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

describe("@pulumi/docker backend's health wait (run for real under sh)", function () {
  let dir: string;
  let runDir: string;
  let server: http.Server;
  let plan: LaunchPlan;
  let healthy: boolean;
  const id = "c0".repeat(32);
  const command = "@pulumi/docker Container narwhal-mock-e1: sha256:1d vllm serve /model";
  const wait = (startS = 5) => dockerHealthWaitScript(plan, id, { dockerCommand: path.join(dir, "docker"), inspectS: 5, runDir, startS, command });
  const attempts = () => path.join(runDir, "attempts");
  const listed = async () => parseKeptAttempts((await sh(listAttemptsScript(runDir, "engine.log"))).stdout);

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "docker-health-"));
    runDir = path.join(dir, "engines", "e1");
    fs.writeFileSync(path.join(dir, "docker"), DOCKER, { mode: 0o755 });
    healthy = true;
    server = http.createServer((req, res) => res.writeHead(req.url === "/health" && healthy ? 200 : 503).end()).listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    const port = (server.address() as AddressInfo).port;
    plan = { engineId: "e1", argv: [], env: {}, url: `http://127.0.0.1:${port}`, tensorParallelSize: 1, maxModelLen: 1024, planSha256: "sha256:" + "c".repeat(64) } as unknown as LaunchPlan;
  });
  afterEach(() => {
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("prints the container id once /health answers, keeping nothing", async () => {
    const r = await sh(wait(), { STATUS: "running 0" });
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal(`${id}\n`);
    expect(fs.existsSync(attempts())).to.equal(false);
  });

  it("keeps a container that exits before /health (its whole log, inspect and exit code) before the error", async () => {
    healthy = false;
    const r = await sh(wait(), { STATUS: "exited 3" });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include(`engine e1: container ${id} is exited (exit code 3) before answering /health`).and.include("pulumi up --refresh");
    const [kept, ...others] = fs.readdirSync(attempts());
    expect(others).to.deep.equal([]);
    const keptDir = path.join(attempts(), kept);
    expect(r.stderr).to.include(`the failed attempt's evidence is kept in ${keptDir}`);
    expect(fs.readFileSync(path.join(keptDir, "engine.log"), "utf8")).to.equal(`whole log of logs ${id}\nValueError: bad --max-model-len\n`);
    expect(fs.readFileSync(path.join(keptDir, "inspect.json"), "utf8")).to.equal('[{"Id":"inspected"}]\n');
    const [one] = await listed();
    expect(one).to.deep.include({ id: kept, exitStatus: 3, command, reason: `engine e1: container ${id} is exited (exit code 3) before answering /health` });
  });

  it("keeps one attempt per run of the container: a retry of the wait on the same stopped container names it and keeps it as it was", async () => {
    healthy = false;
    expect((await sh(wait(), { STATUS: "exited 3" })).code).to.equal(1);
    const [kept] = fs.readdirSync(attempts());
    const before = fs.readFileSync(path.join(attempts(), kept, "ended-at"), "utf8");
    const again = await sh(wait(), { STATUS: "exited 3" });
    expect(again.code).to.equal(1);
    expect(again.stderr).to.include(`this run of container ${id} is already kept in ${path.join(attempts(), kept)}`);
    expect(fs.readdirSync(attempts())).to.deep.equal([kept]);
    expect(fs.readFileSync(path.join(attempts(), kept, "ended-at"), "utf8")).to.equal(before);
  });

  it("gives up at the named start deadline, keeping the running container's log with no exit status", async () => {
    healthy = false;
    const r = await sh(wait(1), { STATUS: "running 0" });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include(`container ${id} did not answer /health within the start deadline of 1s (runtime.deadlinesS.start)`);
    const [one] = await listed();
    expect(one).to.deep.include({ exitStatus: null, reason: `engine e1: container ${id} did not answer /health within the start deadline of 1s` });
  });

  it("refuses a container id that is not one", () => {
    expect(() => dockerHealthWaitScript(plan, "c0", { dockerCommand: "docker", inspectS: 5, runDir: "/r", startS: 5, command })).to.throw("engine e1: container ID \"c0\" is not 64 hex digits");
  });
});
