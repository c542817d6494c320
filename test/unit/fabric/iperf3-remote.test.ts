import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { iperf3Commands } from "../../../lib/fabric/iperf3";
import {
  boundedArgv,
  clientLifetimeS,
  edgeLockWaitS,
  NO_IPERF3,
  preflightRefusal,
  preflightScript,
  runDirOf,
  serverLifetimeS,
  serverStartScript,
  serverStopScript,
  TOOL_NOT_EXECUTABLE,
} from "../../../lib/fabric/iperf3-remote";

const commands = iperf3Commands({ serverAddress: "10.0.1.12", clientAddress: "10.0.1.11", port: 5201, durationS: 2 });

describe("iperf3 on the edge's hosts", () => {
  it("bounds the server and the client by timeout, and runs the server in its own session", () => {
    const start = serverStartScript(commands);
    expect(start).to.include(`setsid 'timeout' '-k' '5' '${serverLifetimeS(2)}' 'iperf3' '-s' '-B' '10.0.1.12' '-p' '5201' '-1' >"$dir/server.log" 2>&1 </dev/null &`);
    expect(boundedArgv(commands.client, clientLifetimeS(commands.settings.durationS))).to.deep.equal(["timeout", "-k", "5", "22", "iperf3", "-c", "10.0.1.12", "-B", "10.0.1.11", "-p", "5201", "-t", "2", "-J"]);
    expect(serverLifetimeS(2)).to.equal(37);
    expect(edgeLockWaitS(2)).to.equal(134);
  });

  it("checks the port only on the destination", () => {
    expect(preflightScript(5201)).to.include("'sport = :5201'");
    expect(preflightScript(null)).to.not.include("sport");
    expect(preflightScript(null)).to.include(`grep '"iperf3"'`);
  });

  it("stops only a measurement's own run folder", () => {
    expect(runDirOf("b", "/tmp/narwhal-fabric.AbC12345\n")).to.equal("/tmp/narwhal-fabric.AbC12345");
    expect(() => runDirOf("b", "mktemp: failed\n")).to.throw('host b: the iperf3 server start printed no run folder: "mktemp: failed\\n"');
    expect(serverStopScript("/tmp/narwhal-fabric.AbC12345", 5201)).to.include("rm -rf '/tmp/narwhal-fabric.AbC12345'");
    expect(() => serverStopScript("/tmp/../etc", 5201)).to.throw('not a measurement run folder: "/tmp/../etc"');
  });
});

describe("the fabric preflight, run by this machine's shells, tells an absent tool from one that cannot run", () => {
  let dir: string;
  const user = os.userInfo().username;

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-fabric-preflight-"));
    // What the script calls besides the tool, with `ss` seeing no sockets (this machine's own iperf3 stays out).
    fs.mkdirSync(path.join(dir, "tools"));
    for (const t of ["ls", "id", "grep"]) fs.symlinkSync(spawnSync("sh", ["-c", `command -v ${t}`], { encoding: "utf8" }).stdout.trim(), path.join(dir, "tools", t));
    fs.writeFileSync(path.join(dir, "tools", "ss"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
    fs.mkdirSync(path.join(dir, "modeless"));
    fs.writeFileSync(path.join(dir, "modeless", "iperf3"), "#!/bin/sh\nexit 0\n", { mode: 0o644 });
    fs.mkdirSync(path.join(dir, "good"));
    fs.writeFileSync(path.join(dir, "good", "iperf3"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const run = (shell: string, ...dirs: string[]) => {
    const PATH = [...dirs, "tools"].map((d) => path.join(dir, d)).join(":");
    const r = spawnSync(`/bin/${shell}`, ["-s"], { input: preflightScript(null), encoding: "utf8", env: { PATH } });
    return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr, PATH };
  };

  for (const shell of ["dash", "bash"]) {
    it(`${shell}: a file named iperf3 on PATH without execute permission is named by path, with its mode and the fix`, () => {
      const r = run(shell, "modeless");
      const at = path.join(dir, "modeless", "iperf3");
      expect(r.code, r.stderr).to.equal(TOOL_NOT_EXECUTABLE);
      expect(r.stdout).to.match(new RegExp(`^iperf3 is at ${at} but this login \\(${user}\\) cannot execute it: -rw-r--r-- .* ${at}\n$`));
      const refusal = preflightRefusal("iperf3", r, "fabric.iperfPort");
      expect(refusal.code).to.equal("NARWHAL_FABRIC_TOOL_MISSING");
      expect(refusal.message).to.equal(
        `${r.stdout.trim()}; it is installed but not executable: make it executable for this login (\`chmod 755 '${at}'\`; on a noexec mount, install it elsewhere) or reinstall iperf3`,
      );
      expect(refusal.message).to.not.include("not installed");
    });

    it(`${shell}: no iperf3 anywhere on PATH is "not installed", naming the PATH searched`, () => {
      const r = run(shell);
      expect(r.code, r.stderr).to.equal(NO_IPERF3);
      expect(preflightRefusal("iperf3", r, "fabric.iperfPort")).to.deep.equal({
        code: "NARWHAL_FABRIC_TOOL_MISSING",
        message: `iperf3 is not installed (not on PATH: ${r.PATH}); install iperf3 on every engine host`,
      });
    });

    it(`${shell}: an executable iperf3 later on PATH is the one the shell runs, so a modeless one before it is no refusal`, () => {
      expect(run(shell, "modeless", "good")).to.include({ code: 0, stdout: "" });
    });
  }

  it("keeps a busy host and a taken port apart from a missing tool, and names any other exit", () => {
    expect(preflightRefusal("ib_write_bw", { code: 76, stdout: "port 18515 is taken:\nLISTEN ...\n", stderr: "" }, "fabric.rdmaPort")).to.deep.equal({
      code: "NARWHAL_FABRIC_BUSY",
      message: "port 18515 is taken:\nLISTEN ...; choose another fabric.rdmaPort or stop that listener",
    });
    expect(preflightRefusal("iperf3", { code: 2, stdout: "", stderr: "sh: 1: syntax error" }, "fabric.iperfPort")).to.deep.equal({
      code: "NARWHAL_FABRIC_BUSY",
      message: "the fabric preflight exited 2: sh: 1: syntax error",
    });
  });
});
