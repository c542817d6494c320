/**
 * The port check that runs before Prometheus or the evidence freshness exporter is replaced (a replacement
 * stops the running one first, to free its port), against real processes on 127.0.0.1: Debian's Prometheus
 * and the exporter started by this program's scripts, and listeners of this test's own process standing in
 * for whatever else holds a port. A refusal is one line naming the host, the port, the owner and the fix, and
 * leaves the running service answering. Grafana runs only from its container image, which this machine does
 * not hold: a container of the engine-simulator image (built here without a registry) holds its port on the
 * host network instead, as Grafana's container does, and the check knows it by the container's main pid.
 */
import { expect } from "chai";
import { localPrometheus } from "../support/local-prometheus";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import { createServer, type Server } from "node:net";
import * as path from "node:path";
import { freshnessPortCheckScript, grafanaPortCheckScript, freshnessStartScript, freshnessStopScript, prometheusPortCheckScript, prometheusStartScript, prometheusStopScript, writeFilesScript, type PrometheusRunOptions } from "../../lib/observability/scripts";
import { prometheusConfig } from "../../lib/observability/prometheus";
import { rulesFile } from "../../lib/observability/rules";
import type { FreshnessRunOptions } from "../../lib/observability/freshness-exporter";
import { buildSimImage } from "../../sim/image/build";
import { freePort, http, removeTemps, tempDir } from "../unit/sim-engine/helpers";

function sh(script: string): { code: number; stdout: string; stderr: string } {
  const r = spawnSync("sh", ["-c", script], { encoding: "utf8", timeout: 120_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A listener of this test's process on `address:port`, closed in `after`. */
async function squat(port: number, address: string, squatters: Server[]): Promise<void> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, address, resolve);
  });
  squatters.push(server);
}

/** The refusal's whole stderr: exactly one line, naming this test's process (node) as the owner. */
function expectOneLineRefusal(stderr: string, what: string, port: number, configKey: string): void {
  const lines = stderr.trim().split("\n");
  expect(lines, stderr).to.have.length(1);
  expect(lines[0]).to.match(new RegExp(`^${what}: port ${port} on host router-1 is taken by pid ${process.pid} \\(\\S*node\\b.*\\); `));
  expect(lines[0]).to.match(new RegExp(`; stop that process or set ${configKey.replace(/\./g, "\\.")} to a free port, then run pulumi up again$`));
}

describe("monitoring port checks: a replacement refused before it stops the running service", function () {
  this.timeout(300_000);
  let prom: PrometheusRunOptions;
  let fresh: FreshnessRunOptions;
  let promPid: string;
  let freshPid: string;
  const squatters: Server[] = [];
  const stops: string[] = [];

  before(async () => {
    fresh = { dir: path.join(tempDir("freshness-"), "freshness"), port: await freePort(), startTimeoutS: 60, stopTimeoutS: 10, hostAlias: "router-1" };
    const e = sh(writeFilesScript(fresh.dir, { "expected.json": JSON.stringify({ engines: [] }) }));
    expect(e.code, e.stderr).to.equal(0);
    stops.push(freshnessStopScript(fresh));
    const f = sh(freshnessStartScript(fresh));
    expect(f.code, f.stderr).to.equal(0);
    freshPid = fs.readFileSync(path.join(fresh.dir, "pid"), "utf8").trim();

    const dir = path.join(tempDir("prometheus-"), "prometheus");
    const port = await freePort();
    prom = localPrometheus(dir, port, { configDigest: "sha256:port-check", hostAlias: "router-1" });
    const files = {
      "prometheus.yml": JSON.stringify(prometheusConfig({ scrapeIntervalS: 5, configDir: dir, freshnessTarget: `127.0.0.1:${fresh.port}` })),
      "rules.yml": JSON.stringify(rulesFile()),
      "engines.json": "[]",
      "router.json": "[]",
    };
    const w = sh(writeFilesScript(dir, files));
    expect(w.code, w.stderr).to.equal(0);
    stops.unshift(prometheusStopScript(prom));
    const p = sh(prometheusStartScript(prom));
    expect(p.code, p.stderr).to.equal(0);
    promPid = fs.readFileSync(path.join(dir, "pid"), "utf8").trim();
  });

  after(async () => {
    for (const s of squatters) s.close();
    for (const script of stops) sh(script);
    removeTemps();
  });

  /** The running Prometheus answers as before, from the same process. */
  async function expectPrometheusServing(): Promise<void> {
    expect((await http(`${prom.localUrl}/-/healthy`)).status).to.equal(200);
    expect(fs.readFileSync(path.join(prom.dir, "pid"), "utf8").trim()).to.equal(promPid);
  }

  describe("Prometheus", () => {
    it("passes its own running Prometheus, the process the replacement takes over", async () => {
      const r = sh(prometheusPortCheckScript(prom));
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.equal("free\n");
      await expectPrometheusServing();
    });

    it("refuses in one line when another process also listens on its port (another address), and Prometheus still answers /-/healthy", async () => {
      await squat(prom.port, "127.0.0.2", squatters);
      const r = sh(prometheusPortCheckScript(prom));
      expect(r.code).to.equal(1);
      expectOneLineRefusal(r.stderr, "prometheus", prom.port, "observability.prometheusPort");
      await expectPrometheusServing();
    });

    it("refuses in one line a new port another process holds, and Prometheus still answers /-/healthy on its old one", async () => {
      const port = await freePort();
      await squat(port, "127.0.0.1", squatters);
      const r = sh(prometheusPortCheckScript({ ...prom, port }));
      expect(r.code).to.equal(1);
      expectOneLineRefusal(r.stderr, "prometheus", port, "observability.prometheusPort");
      await expectPrometheusServing();
    });

    it("refuses for the container runtime too: a listener that is not the named container's is someone else's", async () => {
      const port = await freePort();
      await squat(port, "127.0.0.1", squatters);
      const r = sh(prometheusPortCheckScript({ ...prom, runtime: "container", containerName: "narwhal-port-check-absent-prometheus", port }));
      expect(r.code).to.equal(1);
      expectOneLineRefusal(r.stderr, "prometheus", port, "observability.prometheusPort");
    });
  });

  describe("the evidence freshness exporter", () => {
    it("passes its own running exporter", () => {
      const r = sh(freshnessPortCheckScript(fresh));
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.equal("free\n");
    });

    it("refuses in one line a new port another process holds, and the running exporter still answers /health", async () => {
      const port = await freePort();
      await squat(port, "127.0.0.1", squatters);
      const r = sh(freshnessPortCheckScript({ ...fresh, port }));
      expect(r.code).to.equal(1);
      expectOneLineRefusal(r.stderr, "evidence freshness exporter", port, "observability.freshnessPort");
      expect((await http(`http://127.0.0.1:${fresh.port}/health`)).text).to.equal("ok\n");
      expect(fs.readFileSync(path.join(fresh.dir, "pid"), "utf8").trim()).to.equal(freshPid);
    });
  });

  describe("Grafana (a container on the host network holding its port)", () => {
    const container = `narwhal-port-check-${process.pid}-grafana`;
    let port: number;

    /** Whether the container still runs, as docker sees it. */
    const running = () => spawnSync("docker", ["inspect", "-f", "{{.State.Running}}", container], { encoding: "utf8" }).stdout.trim();

    before(async () => {
      const info = spawnSync("docker", ["info", "--format", "{{.ServerVersion}}"], { encoding: "utf8", timeout: 30_000 });
      if (info.status !== 0) throw new Error(`the Docker Engine does not answer (docker info: ${info.stderr.trim()}); scripts/setup.sh starts dockerd`);
      const image = buildSimImage({ log: () => undefined }).id;
      port = await freePort();
      const listen = `require("node:net").createServer().listen(${port}, "127.0.0.1")`;
      const r = spawnSync("docker", ["run", "-d", "--name", container, "--network", "host", "--entrypoint", "/usr/bin/node", image, "-e", listen], { encoding: "utf8", timeout: 60_000 });
      expect(r.status, r.stderr).to.equal(0);
      // Bounded wait for the container's listener: 30 s is far beyond node's start on a loaded machine.
      const deadline = Date.now() + 30_000;
      while (!spawnSync("ss", ["-Hltn", `sport = :${port}`], { encoding: "utf8" }).stdout.trim()) {
        if (Date.now() > deadline) throw new Error(`container ${container} did not listen on ${port} within 30 s`);
        await new Promise((r) => setTimeout(r, 200));
      }
    });

    after(() => {
      spawnSync("docker", ["rm", "-f", container], { encoding: "utf8", timeout: 60_000 });
    });

    it("passes its own running container, whose main process holds the port", () => {
      const r = sh(grafanaPortCheckScript({ containerName: container, port, hostAlias: "router-1" }));
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.equal("free\n");
    });

    it("refuses in one line a new port another process holds, and the running container is not stopped", async () => {
      const other = await freePort();
      await squat(other, "127.0.0.1", squatters);
      const r = sh(grafanaPortCheckScript({ containerName: container, port: other, hostAlias: "router-1" }));
      expect(r.code).to.equal(1);
      expectOneLineRefusal(r.stderr, "grafana", other, "observability.grafanaPort");
      expect(running()).to.equal("true");
    });

    it("names another container's process when the port is not its own container's", () => {
      const pid = spawnSync("docker", ["inspect", "-f", "{{.State.Pid}}", container], { encoding: "utf8" }).stdout.trim();
      const r = sh(grafanaPortCheckScript({ containerName: `${container}-absent`, port, hostAlias: "router-1" }));
      expect(r.code).to.equal(1);
      expect(r.stderr.trim().split("\n")).to.have.length(1);
      expect(r.stderr.trim()).to.equal(
        `grafana: port ${port} on host router-1 is taken by pid ${pid} (/usr/bin/node -e require("node:net").createServer().listen(${port}, "127.0.0.1")); stop that process or set observability.grafanaPort to a free port, then run pulumi up again`,
      );
      expect(running()).to.equal("true");
    });
  });
});
