// Proves tools/command-provider (our pulumi-resource-command v1.2.1) through the real Pulumi CLI:
// a throwaway sshd on 127.0.0.1 with fresh host and client keys, a tiny TypeScript program using
// @pulumi/command 1.2.1, and the Automation API driving up / preview / destroy against a local
// file backend. Nothing here talks to any address but 127.0.0.1.
import { expect } from "chai";
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { EngineEvent, LocalWorkspace, PulumiCommand, Stack } from "@pulumi/pulumi/automation";
import { localCliEnv } from "../support/local-cli";

const ROOT = path.resolve(__dirname, "..", "..");
const TOOLS = path.join(ROOT, ".tools");
const SSHD = "/usr/sbin/sshd";
const SECRET_VALUE = "narwhal-secret-7f3c9a1e";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, deadlineMs: number): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: "127.0.0.1", port }, () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
      s.setTimeout(1000, () => {
        s.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`sshd did not listen on 127.0.0.1:${port} in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function keygen(file: string): { pub: string; priv: string; fingerprint: string } {
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "", "-f", file]);
  const fingerprint = execFileSync("ssh-keygen", ["-l", "-E", "sha256", "-f", `${file}.pub`]).toString().split(/\s+/)[1];
  return { pub: fs.readFileSync(`${file}.pub`, "utf8").trim(), priv: fs.readFileSync(file, "utf8"), fingerprint };
}

// The program under test. Config decides what it declares, so each step only changes config.
const PROGRAM = `
import * as pulumi from "@pulumi/pulumi";
import { local, remote } from "@pulumi/command";

const cfg = new pulumi.Config();
const mode = cfg.get("mode") ?? "main";
const dir = cfg.require("dir");
const connection = {
  host: "127.0.0.1",
  port: cfg.requireNumber("port"),
  user: cfg.require("user"),
  privateKey: cfg.requireSecret("privateKey"),
  hostKey: cfg.get("hostKey"),
  dialErrorLimit: cfg.getNumber("dialErrorLimit"),
  perDialTimeout: 5,
};

if (mode === "main") {
  const rev = cfg.require("rev");
  const trigger = cfg.require("trigger");
  const marker = new remote.Command("marker", {
    connection,
    environment: { NARWHAL_SECRET: cfg.requireSecret("secretValue") },
    triggers: [trigger],
    create: \`printf '%s' "$NARWHAL_SECRET" > \${dir}/secret.txt && printf '%s' "\${rev}" > \${dir}/marker-\${trigger}.txt && echo "create rev=\${rev} trigger=\${trigger}" >> \${dir}/log.txt && echo created-\${rev}\`,
    update: \`printf '%s' "\${rev}" > \${dir}/marker-\${trigger}.txt && echo "update rev=\${rev} prev=$PULUMI_COMMAND_STDOUT" >> \${dir}/log.txt && echo updated-\${rev} && echo note-\${rev} >&2\`,
    delete: \`rm -f \${dir}/marker-\${trigger}.txt && echo "delete trigger=\${trigger} prev=$PULUMI_COMMAND_STDOUT" >> \${dir}/log.txt\`,
  });
  const loc = new local.Command("loc", {
    create: "echo local-$REV-$(pwd)",
    environment: { REV: rev },
    dir,
    interpreter: ["/bin/bash", "-c"],
  });
  const piped = new local.Command("piped", { create: "tr a-z A-Z", stdin: "hello from stdin" });
  const remoteStdin = new remote.Command("remoteStdin", { connection, create: "cat", stdin: "remote stdin", logging: "none" });
  const viaProxy = new remote.Command("viaProxy", {
    connection: {
      ...connection,
      proxy: {
        host: "127.0.0.1",
        port: cfg.requireNumber("port"),
        user: cfg.require("user"),
        privateKey: cfg.requireSecret("privateKey"),
        hostKey: cfg.get("hostKey"),
      },
    },
    create: "echo via-proxy-$SSH_CLIENT",
  });
  const file = new remote.CopyToRemote("file", {
    connection,
    source: new pulumi.asset.FileAsset(cfg.require("copyFile")),
    remotePath: \`\${dir}/copied.txt\`,
  });
  const tree = new remote.CopyToRemote("tree", {
    connection,
    source: new pulumi.asset.FileArchive(cfg.require("copyDir")),
    remotePath: \`\${dir}/tree\`,
  });
  module.exports = {
    markerStdout: marker.stdout,
    markerStderr: marker.stderr,
    localStdout: loc.stdout,
    pipedStdout: piped.stdout,
    remoteStdinStdout: remoteStdin.stdout,
    viaProxyStdout: viaProxy.stdout,
    copiedTo: file.remotePath,
    treeTo: tree.remotePath,
  };
} else if (mode === "fail") {
  new remote.Command("fails", { connection, create: "echo some-output; echo boom-on-stderr >&2; exit 7" });
} else if (mode === "hostkey") {
  new remote.Command("pinned", { connection, create: "echo should-not-run" });
} else if (mode === "env-rejected") {
  new remote.Command("env", { connection, environment: { NOT_ACCEPTED_BY_SSHD: "x" }, create: "true" });
}
`;

describe("providers: pulumi-resource-command (tools/command-provider) through the real CLI", function () {
  this.timeout(180_000);

  let tmp = "";
  let sshd: ChildProcess | undefined;
  let sshdLog = "";
  let port = 0;
  let host: { pub: string; priv: string; fingerprint: string };
  let other: { pub: string; priv: string; fingerprint: string };
  let client: { pub: string; priv: string; fingerprint: string };
  let remoteDir = "";
  let projectDir = "";
  let cli: PulumiCommand;
  const stacks: Stack[] = [];

  const envVars = (): Record<string, string> => ({
    PATH: `${path.join(TOOLS, "bin")}:${process.env.PATH ?? ""}`,
    PULUMI_HOME: path.join(TOOLS, "pulumi-home"),
    // The plugin installed in the plugin cache, not the copy build.sh leaves in .tools/bin, on PATH.
    ...localCliEnv(path.join(tmp, "state")),
    // A user's project as `pulumi new` leaves it, with no tsconfig: the CLI's default type-checking ts-node,
    // whatever the test run exports for this project's own program (scripts/test.sh).
    PULUMI_NODEJS_TRANSPILE_ONLY: "false",
  });

  async function openStack(name: string, config: Record<string, string>, secrets: Record<string, string> = {}): Promise<Stack> {
    const stack = await LocalWorkspace.createOrSelectStack(
      { stackName: name, workDir: projectDir },
      { pulumiCommand: cli, envVars: envVars(), pulumiHome: path.join(TOOLS, "pulumi-home") },
    );
    stacks.push(stack);
    const all: Record<string, { value: string; secret?: boolean }> = {};
    for (const [k, v] of Object.entries(config)) all[k] = { value: v };
    for (const [k, v] of Object.entries(secrets)) all[k] = { value: v, secret: true };
    await stack.setAllConfig(all);
    return stack;
  }

  const baseConfig = (): Record<string, string> => ({
    dir: remoteDir,
    port: String(port),
    user: os.userInfo().username,
  });

  before(async function () {
    this.timeout(600_000);
    // scripts/setup.sh installs openssh-server and the tests run as root: a missing piece is a failure.
    expect(process.getuid?.(), "these tests start sshd and must run as root").to.equal(0);
    expect(fs.existsSync(SSHD), `${SSHD} is missing: run scripts/setup.sh`).to.equal(true);
    // Build and install the plugin (a no-op when up to date).
    execFileSync("bash", [path.join(ROOT, "tools", "command-provider", "build.sh")], { stdio: "inherit" });
    cli = await PulumiCommand.get({ root: TOOLS, skipVersionCheck: true });

    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-cmdprov-"));
    remoteDir = path.join(tmp, "remote");
    projectDir = path.join(tmp, "project");
    fs.mkdirSync(remoteDir);
    fs.mkdirSync(projectDir);
    fs.mkdirSync(path.join(tmp, "state"));

    host = keygen(path.join(tmp, "host_ed25519"));
    other = keygen(path.join(tmp, "other_ed25519"));
    client = keygen(path.join(tmp, "client_ed25519"));
    fs.writeFileSync(path.join(tmp, "authorized_keys"), client.pub + "\n", { mode: 0o600 });
    port = await freePort();
    const cfgFile = path.join(tmp, "sshd_config");
    fs.writeFileSync(
      cfgFile,
      [
        `Port ${port}`,
        "ListenAddress 127.0.0.1",
        `HostKey ${path.join(tmp, "host_ed25519")}`,
        `PidFile ${path.join(tmp, "sshd.pid")}`,
        `AuthorizedKeysFile ${path.join(tmp, "authorized_keys")}`,
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        // Only these names may be sent with SSH "env" requests; anything else is rejected,
        // as on a stock sshd.
        "AcceptEnv PULUMI_COMMAND_* NARWHAL_*",
        "Subsystem sftp internal-sftp",
        "LogLevel VERBOSE",
        "",
      ].join("\n"),
    );
    fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
    sshd = spawn(SSHD, ["-D", "-e", "-f", cfgFile], { stdio: ["ignore", "pipe", "pipe"] });
    sshd.stdout!.on("data", (d) => (sshdLog += d));
    sshd.stderr!.on("data", (d) => (sshdLog += d));
    await waitForPort(port, 10_000);

    // The program, with node_modules borrowed from the repo.
    fs.writeFileSync(path.join(projectDir, "Pulumi.yaml"), "name: cmdprov-test\nruntime: nodejs\n");
    fs.writeFileSync(path.join(projectDir, "package.json"), JSON.stringify({ name: "cmdprov-test", main: "index.ts" }));
    fs.writeFileSync(
      path.join(projectDir, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { target: "ES2022", module: "commonjs", strict: true, skipLibCheck: true } }),
    );
    fs.writeFileSync(path.join(projectDir, "index.ts"), PROGRAM);
    fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(projectDir, "node_modules"));

    fs.writeFileSync(path.join(tmp, "to-copy.txt"), "copied over sftp\n");
    fs.mkdirSync(path.join(tmp, "payload", "sub"), { recursive: true });
    fs.writeFileSync(path.join(tmp, "payload", "a.txt"), "A\n");
    fs.writeFileSync(path.join(tmp, "payload", "sub", "b.txt"), "B\n");
  });

  after(async function () {
    this.timeout(120_000);
    for (const s of stacks) {
      try {
        await s.workspace.removeStack(s.name, { force: true });
      } catch {
        /* best effort */
      }
    }
    if (sshd && sshd.exitCode === null) {
      sshd.kill("SIGTERM");
    }
    if (tmp && !process.env.KEEP_CMDPROV_TMP) fs.rmSync(tmp, { recursive: true, force: true });
  });

  const readRemote = (name: string): string => fs.readFileSync(path.join(remoteDir, name), "utf8");
  const remoteExists = (name: string): boolean => fs.existsSync(path.join(remoteDir, name));

  describe("the main stack", function () {
    let stack: Stack;
    let out = "";
    const mainConfig = (rev: string, trigger: string): Record<string, string> => ({
      ...baseConfig(),
      mode: "main",
      rev,
      trigger,
      hostKey: host.pub,
      copyFile: path.join(tmp, "to-copy.txt"),
      copyDir: path.join(tmp, "payload"),
    });

    before(async function () {
      stack = await openStack("main", mainConfig("1", "a"), { privateKey: client.priv, secretValue: SECRET_VALUE });
    });

    it("previews a new stack without running anything", async () => {
      const events: EngineEvent[] = [];
      const pre = await stack.preview({ onEvent: (e) => events.push(e) });
      const op = events.find((e) => e.resourcePreEvent?.metadata.urn.endsWith("::marker"))?.resourcePreEvent?.metadata.op;
      expect(op).to.equal("create");
      expect(pre.changeSummary.create).to.be.greaterThan(5);
      expect(fs.readdirSync(remoteDir)).to.deep.equal([]);
    });

    it("creates: runs create over SSH, runs the local command, copies over SFTP, and reads stdout", async () => {
      const res = await stack.up({ onOutput: (s) => (out += s) }).catch((e) => {
        throw new Error(`${e}\n${out}\n--- sshd ---\n${sshdLog}`);
      });
      expect(res.summary.result).to.equal("succeeded");
      expect(res.outputs.markerStdout.value).to.equal("created-1");
      expect(res.outputs.markerStdout.secret).to.equal(false);
      expect(res.outputs.localStdout.value).to.equal(`local-1-${remoteDir}`);
      expect(res.outputs.pipedStdout.value).to.equal("HELLO FROM STDIN");
      expect(res.outputs.remoteStdinStdout.value).to.equal("remote stdin");
      // The jump host is the same sshd: the target sees the tunnelled connection from 127.0.0.1.
      expect(res.outputs.viaProxyStdout.value).to.match(/^via-proxy-127\.0\.0\.1 \d+ \d+$/);
      expect(readRemote("marker-a.txt")).to.equal("1");
      expect(readRemote("secret.txt")).to.equal(SECRET_VALUE);
      expect(readRemote("log.txt")).to.equal("create rev=1 trigger=a\n");
      expect(readRemote("copied.txt")).to.equal("copied over sftp\n");
      expect(readRemote("tree/payload/a.txt")).to.equal("A\n");
      expect(readRemote("tree/payload/sub/b.txt")).to.equal("B\n");
    });

    it("keeps secret inputs and the connection out of plaintext state", async () => {
      // What the backend stores, checkpoint and history alike (stack export would decrypt).
      const files: string[] = [];
      const walk = (d: string): void => {
        for (const e of fs.readdirSync(d, { withFileTypes: true })) {
          const p = path.join(d, e.name);
          if (e.isDirectory()) walk(p);
          else files.push(p);
        }
      };
      walk(path.join(tmp, "state"));
      const keyLine = client.priv.split("\n")[1];
      for (const f of files) {
        const text = fs.readFileSync(f, "utf8");
        expect(text, f).to.not.include(SECRET_VALUE);
        expect(text, f).to.not.include(keyLine);
      }
      const checkpoint = JSON.parse(fs.readFileSync(path.join(tmp, "state", ".pulumi", "stacks", "cmdprov-test", "main.json"), "utf8"));
      const marker = (checkpoint.checkpoint.latest.resources as Array<Record<string, any>>).find((r) => String(r.urn).endsWith("::marker"))!;
      // The engine's secret signature wraps connection and environment in inputs and outputs.
      const sigKey = "4dabf18193072939515e22adb298388d";
      const secretSig = "1b47061264138c4ac30d75fd1eb44270";
      expect(marker.inputs.connection[sigKey]).to.equal(secretSig);
      expect(marker.outputs.connection[sigKey]).to.equal(secretSig);
      expect(marker.outputs.environment.NARWHAL_SECRET[sigKey]).to.equal(secretSig);
      // Defaults applied by Check, as the real provider does; stdout stays plain.
      expect(marker.outputs.addPreviousOutputInEnv).to.equal(true);
      expect(marker.outputs.stdout).to.equal("created-1");
    });

    it("previews an input change as an update and runs update with the previous stdout in its environment", async () => {
      await stack.setAllConfig({ rev: { value: "2" } });
      const events: EngineEvent[] = [];
      const pre = await stack.preview({ onEvent: (e) => events.push(e) });
      const op = events.find((e) => e.resourcePreEvent?.metadata.urn.endsWith("::marker"))?.resourcePreEvent?.metadata.op;
      expect(op).to.equal("update");
      expect(pre.changeSummary.replace ?? 0).to.equal(0);

      const res = await stack.up({ onOutput: (s) => (out += s) });
      expect(res.outputs.markerStdout.value).to.equal("updated-2");
      expect(res.outputs.markerStderr.value).to.equal("note-2");
      expect(res.outputs.localStdout.value).to.equal(`local-2-${remoteDir}`);
      expect(readRemote("marker-a.txt")).to.equal("2");
      expect(readRemote("log.txt")).to.equal("create rev=1 trigger=a\nupdate rev=2 prev=created-1\n");
    });

    it("previews a trigger change as a replace, then creates the new one and deletes the old", async () => {
      await stack.setAllConfig({ trigger: { value: "b" } });
      const events: EngineEvent[] = [];
      const pre = await stack.preview({ onEvent: (e) => events.push(e) });
      const meta = events.find(
        (e) => e.resourcePreEvent?.metadata.urn.endsWith("::marker") && e.resourcePreEvent.metadata.op === "replace",
      )?.resourcePreEvent?.metadata;
      expect(meta, "a replace step for marker").to.not.equal(undefined);
      expect(meta!.keys).to.include("triggers");
      expect(meta!.detailedDiff?.["triggers[0]"]?.diffKind).to.equal("update-replace");
      expect(pre.changeSummary.replace).to.equal(1);

      const res = await stack.up({ onOutput: (s) => (out += s) });
      expect(res.outputs.markerStdout.value).to.equal("created-2");
      expect(remoteExists("marker-b.txt")).to.equal(true);
      expect(remoteExists("marker-a.txt")).to.equal(false);
      expect(readRemote("log.txt")).to.equal(
        "create rev=1 trigger=a\nupdate rev=2 prev=created-1\ncreate rev=2 trigger=b\ndelete trigger=a prev=updated-2\n",
      );
    });

    it("refreshes to the same state and reports no changes on a second run", async () => {
      const ref = await stack.refresh({});
      expect(Object.keys(ref.summary.resourceChanges ?? {}).filter((k) => k !== "same")).to.deep.equal([]);
      const pre = await stack.preview({});
      expect(Object.keys(pre.changeSummary).filter((k) => k !== "same")).to.deep.equal([]);
    });

    it("runs delete on destroy", async () => {
      await stack.destroy({ onOutput: (s) => (out += s) });
      expect(remoteExists("marker-b.txt")).to.equal(false);
      expect(readRemote("log.txt").trim().split("\n").pop()).to.equal("delete trigger=b prev=created-2");
    });
  });

  async function upExpectingFailure(stack: Stack): Promise<string> {
    let out = "";
    const started = Date.now();
    try {
      await stack.up({ onOutput: (s) => (out += s) });
    } catch (e) {
      if (process.env.DEBUG_CMDPROV) console.log(String(e));
      return `${String(e)}\n${out}`;
    } finally {
      expect(Date.now() - started, "a failing up stays bounded").to.be.lessThan(90_000);
    }
    throw new Error(`up succeeded but should have failed:\n${out}`);
  }

  it("fails a wrong pinned host key, naming the host and both SHA256 fingerprints", async () => {
    const stack = await openStack(
      "hostkey",
      { ...baseConfig(), mode: "hostkey", hostKey: other.pub, dialErrorLimit: "1" },
      { privateKey: client.priv },
    );
    const msg = await upExpectingFailure(stack);
    expect(msg).to.include("host key mismatch");
    expect(msg).to.include(`127.0.0.1:${port}`);
    expect(msg).to.include(other.fingerprint);
    expect(msg).to.include(host.fingerprint);
    expect(msg).to.include("after 2 failed attempts");
  });

  it("gives up on an unreachable port after dialErrorLimit retries, naming the host", async () => {
    const closed = await freePort();
    const stack = await openStack(
      "unreachable",
      { ...baseConfig(), port: String(closed), mode: "hostkey", dialErrorLimit: "1" },
      { privateKey: client.priv },
    );
    const msg = await upExpectingFailure(stack);
    expect(msg).to.include(`127.0.0.1:${closed}`);
    expect(msg).to.include("connection refused");
    expect(msg).to.include("after 2 failed attempts");
  });

  it("fails a command that exits non-zero, with its exit code and output", async () => {
    const stack = await openStack("fail", { ...baseConfig(), mode: "fail" }, { privateKey: client.priv });
    const msg = await upExpectingFailure(stack);
    expect(msg).to.include("Process exited with status 7");
    expect(msg).to.include("boom-on-stderr");
    const state = await stack.exportStack();
    const urns = ((state.deployment.resources ?? []) as Array<{ urn: string }>).map((r) => r.urn);
    expect(urns.some((u) => u.endsWith("::fails"))).to.equal(false);
  });

  it("fails, like the real provider, when sshd rejects an environment variable", async () => {
    const stack = await openStack("envrejected", { ...baseConfig(), mode: "env-rejected" }, { privateKey: client.priv });
    const msg = await upExpectingFailure(stack);
    expect(msg).to.include('could not set environment variable "NOT_ACCEPTED_BY_SSHD"');
    expect(msg).to.include("AcceptEnv");
  });
});
