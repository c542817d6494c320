import { expect } from "chai";
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ownerFromSs, portCheckScript, refuseTakenPortLines, takenPortMessage } from "../../lib/port-taken";

describe("a router or monitoring port already taken", () => {
  it("reads the owner from ss -Hltnp output", () => {
    const line = `LISTEN 0      5            0.0.0.0:8921      0.0.0.0:*    users:(("python3",pid=4242,fd=3))`;
    expect(ownerFromSs(line)).to.deep.equal({ pid: 4242, name: "python3" });
    expect(ownerFromSs("LISTEN 0 5 0.0.0.0:8921 0.0.0.0:*")).to.equal(undefined);
  });

  it("takes the first process of a listener several processes share, and a name with quotes in it", () => {
    const shared = `LISTEN 0 4096 *:3000 *:* users:(("grafana",pid=3311,fd=12),("grafana",pid=3312,fd=12))`;
    expect(ownerFromSs(shared)).to.deep.equal({ pid: 3311, name: "grafana" });
    expect(ownerFromSs(`LISTEN 0 5 [::1]:9090 [::]:* users:(("we\\"ird",pid=77,fd=7))`)).to.deep.equal({ pid: 77, name: `we\\"ird` });
  });

  it("says host, port, owner and fix in one line", () => {
    expect(takenPortMessage({ what: "router", port: 8921, configKey: "router.port", hostAlias: "sim13" }, "pid 4242 (python3 -m http.server 8921)")).to.equal(
      "router: port 8921 on host sim13 is taken by pid 4242 (python3 -m http.server 8921); stop that process or set router.port to a free port, then run pulumi up again",
    );
  });

  describe("the script's refusal, against a real listener on this machine", () => {
    let listener: ChildProcess;
    const port = 18921;
    before(async function () {
      try {
        execFileSync("sh", ["-c", "command -v ss"]);
      } catch {
        this.skip();
      }
      listener = spawn("python3", ["-m", "http.server", String(port), "--bind", "127.0.0.1"], { stdio: "ignore" });
      // Bounded wait for the listener: 10 s is far beyond python's start on a loaded machine.
      for (let i = 0; i < 100; i++) {
        if (execFileSync("sh", ["-c", `ss -Hltn 'sport = :${port}'`], { encoding: "utf8" }).trim()) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`python3 -m http.server did not listen on ${port} within 10 s`);
    });
    after(() => listener?.kill());

    it("prints exactly one line naming the owner's pid and command, and fails", () => {
      const script = `set -eu\n${refuseTakenPortLines({ what: "prometheus", port, configKey: "observability.prometheusPort", hostAlias: "sim13" })}\necho started`;
      let stderr = "";
      let code = 0;
      try {
        execFileSync("sh", ["-c", script], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      } catch (err) {
        ({ stderr, status: code } = err as { stderr: string; status: number });
      }
      expect(code).to.equal(1);
      // python3 may be a pyenv shim that execs the real interpreter: its path is whatever /proc says.
      expect(stderr.split("\n")).to.have.length(2);
      expect(stderr).to.match(
        new RegExp(
          `^prometheus: port ${port} on host sim13 is taken by pid ${listener.pid} \\(\\S*python3\\S* -m http\\.server ${port} --bind 127\\.0\\.0\\.1\\); ` +
            "stop that process or set observability\\.prometheusPort to a free port, then run pulumi up again\n$",
        ),
      );
    });

    it("lets through the listener of our own serving router (its pid file), which the replacement takes over", () => {
      const pidFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-own-")), "pid");
      fs.writeFileSync(pidFile, `${listener.pid}\n`);
      const script = portCheckScript({ what: "router", port, configKey: "router.port", own: { pidFile } });
      expect(execFileSync("sh", ["-c", script], { encoding: "utf8" })).to.equal("free\n");
      fs.writeFileSync(pidFile, "1\n"); // another process's pid: the listener is not ours
      expect(() => execFileSync("sh", ["-c", script], { stdio: "ignore" })).to.throw();
    });

    it("lets through the listener of any of several own processes (the router's front, or a router from before fronts), and no other", () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-own-"));
      const [front, router] = [path.join(dir, "front.pid"), path.join(dir, "router.pid")];
      const script = portCheckScript({ what: "router", port, configKey: "router.port", own: { pidFiles: [front, router] } });
      fs.writeFileSync(front, "999999999\n"); // a front that is gone
      fs.writeFileSync(router, `${listener.pid}\n`);
      expect(execFileSync("sh", ["-c", script], { encoding: "utf8" })).to.equal("free\n");
      fs.writeFileSync(front, `${listener.pid}\n`);
      fs.rmSync(router);
      expect(execFileSync("sh", ["-c", script], { encoding: "utf8" })).to.equal("free\n");
      fs.writeFileSync(front, "1\n");
      const r = spawnSync("sh", ["-c", script], { encoding: "utf8" });
      expect(r.status).to.equal(1);
      expect(r.stderr).to.contain(`is taken by pid ${listener.pid} (`);
    });

    it("names another listener on the same port (another address) even when our own process holds it too", async () => {
      const pidFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-own-")), "pid");
      fs.writeFileSync(pidFile, `${listener.pid}\n`);
      const other = spawn("python3", ["-m", "http.server", String(port), "--bind", "127.0.0.2"], { stdio: "ignore" });
      try {
        // Bounded wait for the second listener, as for the first.
        for (let i = 0; i < 100 && !execFileSync("sh", ["-c", `ss -Hltn 'src 127.0.0.2 and sport = :${port}'`], { encoding: "utf8" }).trim(); i++) await new Promise((r) => setTimeout(r, 100));
        const r = spawnSync("sh", ["-c", portCheckScript({ what: "prometheus", port, configKey: "observability.prometheusPort", own: { pidFile } })], { encoding: "utf8" });
        expect(r.status).to.equal(1);
        expect(r.stderr).to.match(new RegExp(`^prometheus: port ${port} on this host is taken by pid ${other.pid} \\(\\S*python3\\S* -m http\\.server ${port} --bind 127\\.0\\.0\\.2\\); stop that process or set observability\\.prometheusPort to a free port, then run pulumi up again\n$`));
      } finally {
        other.kill();
      }
    });

    it("does not take a pid file whose process is gone for our own", () => {
      const pidFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-own-")), "pid");
      fs.writeFileSync(pidFile, "999999999\n");
      const r = spawnSync("sh", ["-c", portCheckScript({ what: "router", port, configKey: "router.port", own: { pidFile } })], { encoding: "utf8" });
      expect(r.status).to.equal(1);
      expect(r.stderr).to.contain(`is taken by pid ${listener.pid} (`);
    });

    it("passes a free port through", () => {
      const out = execFileSync("sh", ["-c", `set -eu\n${refuseTakenPortLines({ what: "router", port: port + 1, configKey: "router.port" })}\necho started`], { encoding: "utf8" });
      expect(out).to.equal("started\n");
    });
  });
});
