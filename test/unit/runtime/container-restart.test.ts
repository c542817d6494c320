import { expect } from "chai";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import type { AddressInfo } from "node:net";
import type { LaunchPlan } from "../../../lib/launch/plan";
import { containerRestartScript } from "../../../lib/runtime/restart";

/** A docker client that records its argv and reports the container as `STATE` says. */
const DOCKER = `#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls"
case "$1" in
  restart) exit 0 ;;
  inspect) echo "$STATE" ;;
  *) exit 2 ;;
esac
`;

function sh(script: string, env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile("sh", ["-c", script], { env: { ...process.env, ...env } }, (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }));
  });
}

describe("container restart script (run for real under sh)", function () {
  let dir: string;
  let server: http.Server;
  let plan: LaunchPlan;
  let healthy: boolean;
  const id = "0123456789ab".repeat(2);

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "container-restart-"));
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

  it("restarts the container by id with the stop deadline, then waits for /health", async () => {
    const r = await sh(containerRestartScript(plan, path.join(dir, "docker"), id, { stop: 7, health: 5 }), { STATE: "true" });
    expect(r.code, r.stderr).to.equal(0);
    expect(fs.readFileSync(path.join(dir, "calls"), "utf8").split("\n")[0]).to.equal(`restart --time 7 ${id}`);
  });

  it("fails, naming the engine, when the container stops running after the restart", async () => {
    healthy = false;
    const r = await sh(containerRestartScript(plan, path.join(dir, "docker"), id, { stop: 7, health: 5 }), { STATE: "false" });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include("engine e3 exited after its restart, before answering /health");
  });

  it("gives up within the named health timeout when the engine never answers", async () => {
    healthy = false;
    const r = await sh(containerRestartScript(plan, path.join(dir, "docker"), id, { stop: 7, health: 1 }), { STATE: "true" });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include("engine e3 did not answer /health within health timeout 1s of its restart");
  });
});
