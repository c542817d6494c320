import { expect } from "chai";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { controllerCheckScript, controllerConflictMessage, documentEngines, engineAddressOf, enginePortOf, type ControllerCheckOptions } from "../../../lib/router/controller-check";

const FAKE = path.join(__dirname, "support", "narwhal-serve");

describe("router: one controller per fleet", () => {
  it("reads an engine URL's authority as narwhal's /narwhal/targets prints it, and its port", () => {
    expect(engineAddressOf("http://198.18.0.11:8100")).to.equal("198.18.0.11:8100");
    expect(engineAddressOf("http://user:pw@10.0.0.5:8100/v1")).to.equal("10.0.0.5:8100");
    expect(engineAddressOf("http://[fd00::5]:8100")).to.equal("[fd00::5]:8100");
    expect(enginePortOf("http://[fd00::5]:8100")).to.equal(8100);
    expect(enginePortOf("https://gpu1.example")).to.equal(443);
    expect(() => engineAddressOf("gpu1:8100")).to.throw(/engine URL "gpu1:8100" has no host/);
    expect(documentEngines({ engines: [{ iid: "p0", url: "http://a:1" }] })).to.deep.equal([{ id: "p0", url: "http://a:1" }]);
    expect(() => documentEngines({ engines: [{ iid: "p0" }] })).to.throw(/engines\[0\]\.url is missing/);
  });

  it("says which engines, the host, the router's port, pid and command line, and the fix, in one line", () => {
    const m = controllerConflictMessage({ engines: "127.0.0.1:8100", hostAlias: "gpu2", port: "8000", pid: "4242", command: "python3 narwhal-serve --port 8000" });
    expect(m).to.equal(
      "router: another Narwhal router already serves this fleet's engine(s) 127.0.0.1:8100: host gpu2, port 8000, pid 4242 (python3 narwhal-serve --port 8000); " +
        "exactly one controller may be active for a fleet: stop that router (pulumi destroy on the stack that started it, or stop pid 4242 on gpu2), then run pulumi up again",
    );
  });

  // A process can exit between the listing of /proc and the reading of its cmdline (on a busy host, often):
  // the shell's own "cannot open" must not reach stderr, where it would read as part of a refusal.
  it("reads a process that is gone as no router, writing nothing to stderr", () => {
    const script = controllerCheckScript({ hostAlias: "h", ownRouterDir: "/nonexistent/router", engineAddresses: [], localEngines: [], fleetAddresses: [] });
    const helpers = script.split("\n").filter((l) => /^(is_router|arg_of|cmd_of)\(\)/.test(l));
    expect(helpers).to.have.length(3);
    const gone = 2 ** 22 + 17; // above Linux's pid_max default, so never a live process
    const r = spawnSync("sh", ["-c", [...helpers, `is_router ${gone} || echo not-a-router`, `echo "[$(arg_of ${gone} --port 8000)]"`, `echo "[$(cmd_of ${gone})]"`].join("\n")], { encoding: "utf8" });
    expect(r.stderr).to.equal("");
    expect(r.stdout).to.equal("not-a-router\n[8000]\n[]\n");
  });

  describe("the script, against stand-in routers and an engine port on this machine", () => {
    let engine: Server;
    let enginePort: number;
    const held: Socket[] = [];
    const started: ChildProcess[] = [];
    let tmp: string;

    before(async function () {
      if (spawnSync("sh", ["-c", "command -v ss && command -v curl"]).status !== 0) this.skip();
      tmp = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-controller-"));
      engine = createServer((s) => void held.push(s));
      await new Promise<void>((ok) => engine.listen(0, "127.0.0.1", ok));
      enginePort = (engine.address() as { port: number }).port;
    });
    afterEach(() => {
      for (const p of started.splice(0)) p.kill("SIGKILL");
      for (const s of held.splice(0)) s.destroy();
    });
    after(() => {
      engine?.close();
      if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
    });

    const freePort = async (): Promise<number> => {
      const s = createServer();
      await new Promise<void>((ok) => s.listen(0, "127.0.0.1", ok));
      const port = (s.address() as { port: number }).port;
      await new Promise((ok) => s.close(ok));
      return port;
    };

    /** Starts a stand-in router in `cwd` and waits (bounded: 10 s) until it printed ready and, unless silent, answers. */
    const router = async (cwd: string, args: string[]): Promise<{ pid: number; port: number }> => {
      fs.mkdirSync(cwd, { recursive: true });
      fs.writeFileSync(path.join(cwd, "fleet.json"), JSON.stringify({ engines: [{ iid: "p9", url: "http://127.0.0.1:1" }] }));
      const port = await freePort();
      const p = spawn("python3", [FAKE, "--fleet", "fleet.json", "--host", "127.0.0.1", "--port", String(port), ...args], { cwd, stdio: ["pipe", "pipe", "inherit"] });
      started.push(p);
      await new Promise<void>((ok, fail) => {
        const timer = setTimeout(() => fail(new Error("the stand-in router did not start within 10 s")), 10_000);
        p.stdout.once("data", () => (clearTimeout(timer), ok()));
      });
      if (!args.includes("--silent")) {
        for (let i = 0; i < 100 && spawnSync("curl", ["-fsS", `http://127.0.0.1:${port}/narwhal/targets`]).status !== 0; i++) await new Promise((r) => setTimeout(r, 100));
      }
      return { pid: p.pid!, port };
    };

    const options = (over: Partial<ControllerCheckOptions> = {}): ControllerCheckOptions => ({
      hostAlias: "gpu2",
      ownRouterDir: path.join(tmp, "ours", "router"),
      engineAddresses: [`127.0.0.1:${enginePort}`],
      localEngines: [{ id: "p0", port: enginePort }],
      fleetAddresses: ["198.18.0.12"],
      ...over,
    });
    const check = (o: ControllerCheckOptions) => spawnSync("sh", ["-c", controllerCheckScript(o)], { encoding: "utf8", timeout: 60_000 });

    it("refuses another stack's router whose /narwhal/targets lists one of the fleet's engines, naming host, port, pid and command", async () => {
      const other = await router(path.join(tmp, "theirs", "router"), ["--targets", `10.9.9.9:1,127.0.0.1:${enginePort}`]);
      const r = check(options());
      expect(r.status, r.stdout).to.equal(1);
      expect(r.stderr.trim().split("\n")).to.have.length(1);
      expect(r.stderr).to.match(
        new RegExp(
          `^router: another Narwhal router already serves this fleet's engine\\(s\\) 127\\.0\\.0\\.1:${enginePort}: host gpu2, port ${other.port}, pid ${other.pid} \\(\\S*python3\\S* ${FAKE.replace(/[.]/g, "\\.")} --fleet fleet\\.json --host 127\\.0\\.0\\.1 --port ${other.port}`,
        ),
      );
      expect(r.stderr).to.contain(`or stop pid ${other.pid} on gpu2), then run pulumi up again`);
    });

    it("lets this stack's own router through (it works in this stack's router folder), and a router of another fleet", async () => {
      const own = await router(path.join(tmp, "ours", "router"), ["--targets", `127.0.0.1:${enginePort}`, "--connect", `127.0.0.1:${enginePort}`]);
      const unrelated = await router(path.join(tmp, "another-fleet", "router"), ["--targets", "10.9.9.9:8100"]);
      const r = check(options());
      expect(r.status, r.stderr).to.equal(0);
      const out = JSON.parse(r.stdout.trim().split("\n").pop()!) as { host: string; routers: number[]; foreignPeers: string[] };
      expect(out.host).to.equal("gpu2");
      expect(out.routers).to.include(unrelated.pid);
      expect(out.routers).to.not.include(own.pid);
      expect(out.foreignPeers).to.deep.equal([]);
    });

    it("reads the fleet document of a router that does not answer yet", async () => {
      const dir = path.join(tmp, "starting", "router");
      const silent = await router(dir, ["--silent"]);
      fs.writeFileSync(path.join(dir, "fleet.json"), JSON.stringify({ engines: [{ iid: "p0", url: `http://127.0.0.1:${enginePort}` }] }));
      const r = check(options());
      expect(r.status, r.stdout).to.equal(1);
      expect(r.stderr).to.contain(`engine(s) 127.0.0.1:${enginePort}: host gpu2, port ${silent.port}, pid ${silent.pid} (`);
    });

    it("refuses a router holding a connection to an engine's port from this host, whatever it lists", async () => {
      const hidden = await router(path.join(tmp, "hidden", "router"), ["--targets", "", "--connect", `127.0.0.1:${enginePort}`]);
      const r = check(options());
      expect(r.status, r.stdout).to.equal(1);
      expect(r.stderr).to.contain(`engine(s) p0 (its connection to port ${enginePort}): host gpu2, port ${hidden.port}, pid ${hidden.pid} (`);
    });
  });
});
