import { expect } from "chai";
import * as fs from "node:fs";
import * as net from "node:net";
import { SshSession, withSsh } from "../../lib/ssh/client";
import { SshError } from "../../lib/ssh/errors";
import { setConfiguredHosts } from "../../lib/ssh/configured-hosts";
import { OPERATE, sshTarget, type SshTarget } from "../../lib/ssh/login";
import { simUp, spawnInHost } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";

/** How long a listener's "conn" line may trail the client's failure it caused. */
const LISTENER_LINE_TIMEOUT_MS = 10_000;

function target(h: SimHost, extra: Partial<SshTarget> = {}): SshTarget {
  return {
    alias: h.alias,
    host: h.address,
    port: h.sshPort,
    user: h.user,
    privateKey: fs.readFileSync(h.privateKeyPath, "utf8"),
    hostKey: h.hostKey,
    allowFirstContact: false,
    connectTimeoutS: 10,
    ...extra,
  };
}

async function failure(p: Promise<unknown>): Promise<SshError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof SshError) return err;
    throw err;
  }
  throw new Error("expected an SshError");
}

describe("providers: SSH client against the simulated hosts", function () {
  this.timeout(60_000);
  let hosts: SimHost[];
  before(async () => ({ hosts } = await simUp({})));

  it("logs in with the pinned key and runs commands over one session", async () => {
    const out = await withSsh(target(hosts[0]), async (s) => [await s.run("hostname", { timeoutS: 10, name: "hostname" }), await s.run("echo $((6*7))", { timeoutS: 10, name: "sum" })]);
    expect(out.map((o) => o.trim())).to.deep.equal([hosts[0].alias, "42"]);
  });

  it("refuses a host whose key differs from the pin, naming both fingerprints", async () => {
    const [a, b] = hosts as [SimHost, SimHost];
    const err = await failure(SshSession.open(target(a, { hostKey: b.hostKey })));
    expect(err.code).to.equal("NARWHAL_SSH_HOST_KEY");
    expect(err.message).to.equal(
      `host ${a.alias}: the SSH host key changed (pinned ${b.fingerprint}, presented ${a.fingerprint}); nothing was run on it. ` +
        `If the host was legitimately re-keyed, pin its new key: pulumi config set --path 'hosts[<index of ${a.alias}>].hostKey' '${a.hostKey}', ` +
        "then pulumi preview --refresh and pulumi up --refresh.",
    );
  });

  it("refuses first contact when the config does not allow it", async () => {
    const err = await failure(SshSession.open(target(hosts[0], { hostKey: undefined })));
    expect(err.message).to.equal(
      `host ${hosts[0].alias}: no pinned host key and ssh.allowFirstContact is false; pin hosts[].hostKey (the server presented ${hosts[0].fingerprint}) and run again.`,
    );
  });

  it("records the key on first contact when allowed", async () => {
    const key = await withSsh(target(hosts[0], { hostKey: undefined, allowFirstContact: true }), async (s) => s.hostKey);
    expect(key).to.deep.equal({ line: hosts[0].hostKey, fingerprint: hosts[0].fingerprint });
  });

  it("hops through a jump host, verifying both keys", async () => {
    const [a, b] = hosts as [SimHost, SimHost];
    const name = await withSsh(target(b, { jump: target(a) }), (s) => s.run("hostname", { timeoutS: 10, name: "hostname" }));
    expect(name.trim()).to.equal(b.alias);
    const err = await failure(SshSession.open(target(b, { jump: target(a, { hostKey: b.hostKey }) })));
    expect(err.code).to.equal("NARWHAL_SSH_HOST_KEY");
    expect(err.message).to.include(`host ${a.alias}:`);
  });

  it("a re-keyed bastion is pinned as any fleet host is: the refusal names its place in hosts, and the pin lets old inputs hop again", async () => {
    const [a, b] = hosts as [SimHost, SimHost];
    // A refresh's login carries the bastion key pinned at the last up; `a` now presents another one.
    const stale = target(b, { jump: target(a, { hostKey: b.hostKey }) });
    try {
      setConfiguredHosts([{ alias: b.alias }, { alias: a.alias }]);
      const err = await failure(SshSession.open(stale));
      expect(err.message).to.include(`host ${a.alias}: the SSH host key changed (pinned ${b.fingerprint}, presented ${a.fingerprint})`);
      expect(err.message).to.include(`pulumi config set --path 'hosts[1].hostKey' '${a.hostKey}'`);
      // The operator runs that command: the stack file's pin outranks the stale one in the old inputs.
      setConfiguredHosts([{ alias: b.alias }, { alias: a.alias, hostKey: a.hostKey }]);
      const name = await withSsh(stale, (s) => s.run("hostname", { timeoutS: 10, name: "hostname" }));
      expect(name.trim()).to.equal(b.alias);
    } finally {
      setConfiguredHosts(undefined);
    }
  });

  it("says the connection was lost, naming the host and the step, when it drops mid-command", async () => {
    const t = target(hosts[0], { connectTimeoutS: 12 }); // a login of its own: this test kills it
    const { err, seconds } = await timedFailure(withSsh(t, (s) => s.exec("sleep 0.2; kill -9 $PPID; sleep 20", { timeoutS: 30, name: "drop mid-step" })));
    expect(err.code).to.equal("NARWHAL_SSH_LOST");
    expect(err.message).to.equal(
      `host ${hosts[0].alias}: the SSH connection (${hosts[0].address}:${hosts[0].sshPort}) was lost during drop mid-step, ` +
        "before it reported an exit status; check that the host and its sshd are up, then run again",
    );
    expect(seconds).to.be.below(10);
  });

  it("bounds the hop behind a jump host: a target that closes after its banner fails at once, and is dialled afresh", async () => {
    const a = hosts[0];
    const port = 20000 + Math.floor(Math.random() * 20000);
    // A listener inside host a's own loopback that sends an SSH banner and hangs up, one line per connection.
    const script =
      "import socket\n" +
      "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n" +
      `s.bind(("127.0.0.1", ${port})); s.listen(8); print("ready", flush=True)\n` +
      "while True:\n" +
      "    c, _ = s.accept(); print(\"conn\", flush=True); c.sendall(b\"SSH-2.0-OpenSSH_9.2\\r\\n\"); c.close()\n";
    const child = spawnInHost(a.alias, ["python3", "-c", script], { stdio: ["ignore", "pipe", "ignore"] });
    let printed = "";
    child.stdout!.on("data", (d: Buffer) => (printed += d.toString("utf8")));
    try {
      while (!printed.includes("ready")) await new Promise((r) => setTimeout(r, 50));
      const inner = { ...loopback(port), alias: "inner", jump: target(a) };
      const { err, seconds } = await timedFailure(SshSession.open(inner));
      expect(err.message).to.equal(
        `ssh to inner (127.0.0.1:${port} via ${a.alias}): the server closed the connection before login, after its SSH banner; ` +
          "check that sshd runs and accepts this client and user root (sshd's log on the host says why it dropped the connection)",
      );
      expect(seconds).to.be.below(5);
      await failure(SshSession.open(inner));
      // The listener's line and the client's failure travel on two sockets: wait for the line, boundedly.
      const seen = () => printed.match(/conn/g)?.length ?? 0;
      for (const until = Date.now() + LISTENER_LINE_TIMEOUT_MS; seen() < 2 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
      expect(seen(), "connections the listener saw").to.equal(2);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("bounds the jump host's own login, naming the jump host", async () => {
    const server = await misbehavingServer((sock) => sock.end());
    try {
      const { err } = await timedFailure(SshSession.open(target(hosts[1], { jump: loopback(server.port, { alias: "bastion" }) })));
      expect(err.message).to.match(new RegExp(`^ssh to bastion \\(127\\.0\\.0\\.1:${server.port}\\): the server closed the connection before login`));
      await failure(SshSession.open(target(hosts[1], { jump: loopback(server.port, { alias: "bastion" }) })));
      expect(server.connections()).to.equal(2);
    } finally {
      await server.close();
    }
  });

  it("names the step and its deadline when a command overruns", async () => {
    const err = await failure(withSsh(target(hosts[0]), (s) => s.exec("sleep 5", { timeoutS: 1, name: "slow step" })));
    expect(err.message).to.equal(`host ${hosts[0].alias}: slow step did not finish within 1s`);
  });
});

describe("providers: SSH sessions per host", function () {
  this.timeout(60_000);

  it("logs in once for every session of an operation, and runs at most maxSessions commands at once", async () => {
    const { hosts } = await simUp({});
    const h = hosts[1];
    const base = target(h, { maxSessions: 2 });
    const before = SshSession.loginsMade();
    let peak = 0;
    await Promise.all(
      Array.from({ length: 6 }, () =>
        withSsh(base, async (s) => {
          await Promise.all([
            s.run("sleep 0.3", { timeoutS: 10, name: "hold" }),
            (async () => {
              await new Promise((r) => setTimeout(r, 100));
              peak = Math.max(peak, SshSession.runningCommands(h.address, h.sshPort));
            })(),
          ]);
        }),
      ),
    );
    expect(SshSession.loginsMade() - before, "logins for six sessions").to.equal(1);
    expect(peak).to.equal(2);
    expect(SshSession.runningCommands(h.address, h.sshPort)).to.equal(0);
    // A later session of the same operation reuses the kept login.
    await withSsh(base, (s) => s.run("true", { timeoutS: 10, name: "again" }));
    expect(SshSession.loginsMade() - before).to.equal(1);
  });

  it("shares one login between discovery and every later use of a pinned host", async () => {
    // Discovery may learn a key (ssh.allowFirstContact) and later logins may not; once the key is pinned both
    // are the same login, and a refresh that reads discovery and fabric edges on one host logs in once.
    const { hosts } = await simUp({});
    const h = hosts[2];
    const { allowFirstContact: _afc, ...login } = target(h);
    const connections: unknown[] = [];
    for (const purpose of [{ kind: "discover", allowFirstContact: true } as const, OPERATE]) {
      await withSsh(sshTarget(login, purpose), async (s) => {
        connections.push(s.pooled);
        await s.run("true", { timeoutS: 10, name: purpose.kind });
      });
    }
    expect(connections[1], "the later use's connection").to.equal(connections[0]);
  });

  it("logs in afresh when the kept connection dropped", async () => {
    const { hosts } = await simUp({});
    const h = hosts[1];
    const base = target(h, { connectTimeoutS: 11 }); // a login of its own, apart from the other tests'
    await withSsh(base, (s) => s.run("true", { timeoutS: 10, name: "first" }));
    const before = SshSession.loginsMade();
    // The server side of the kept connection goes away (sshd restarted, a network blip).
    await withSsh(base, (s) => s.exec("kill -9 $PPID", { timeoutS: 10, name: "drop" }).catch(() => undefined));
    await new Promise((r) => setTimeout(r, 300));
    expect(await withSsh(base, (s) => s.run("echo back", { timeoutS: 10, name: "after" }))).to.equal("back\n");
    expect(SshSession.loginsMade() - before).to.equal(1);
  });
});

/** A TCP server on 127.0.0.1 that does `greet` to every connection and counts them. */
async function misbehavingServer(greet: (sock: net.Socket) => void): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let count = 0;
  const open = new Set<net.Socket>();
  const server = net.createServer((sock) => {
    count++;
    open.add(sock);
    sock.on("close", () => open.delete(sock));
    sock.on("error", () => undefined);
    greet(sock);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    connections: () => count,
    close: () => {
      for (const s of open) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function loopback(port: number, extra: Partial<SshTarget> = {}): SshTarget {
  return { alias: "flaky", host: "127.0.0.1", port, user: "root", password: "unused", allowFirstContact: true, connectTimeoutS: 5, ...extra };
}

/** Fails `p` (expected to reject with an SshError) and measures how long it took. */
async function timedFailure(p: Promise<unknown>): Promise<{ err: SshError; seconds: number }> {
  const start = Date.now();
  const err = await failure(p);
  return { err, seconds: (Date.now() - start) / 1000 };
}

describe("providers: SSH logins to a server that goes away (127.0.0.1)", function () {
  this.timeout(30_000);

  it("fails at once when the server closes before its SSH banner, and the next login dials afresh", async () => {
    const server = await misbehavingServer((sock) => sock.end());
    try {
      const { err, seconds } = await timedFailure(SshSession.open(loopback(server.port)));
      expect(err.code).to.equal("NARWHAL_SSH_CONNECT");
      expect(err.message).to.equal(
        `ssh to flaky (127.0.0.1:${server.port}): the server closed the connection before login, without sending an SSH banner; ` +
          `check that sshd (and not another service) listens on port ${server.port} and accepts connections from here (firewall, TCP wrappers, sshd MaxStartups)`,
      );
      expect(seconds).to.be.below(5);
      // The failed login is not kept: a second attempt makes a connection of its own.
      await failure(SshSession.open(loopback(server.port)));
      expect(server.connections()).to.equal(2);
    } finally {
      await server.close();
    }
  });

  it("fails at once when the server closes right after its SSH banner, and the next login dials afresh", async () => {
    const server = await misbehavingServer((sock) => sock.end("SSH-2.0-OpenSSH_9.2\r\n"));
    try {
      const { err, seconds } = await timedFailure(withSsh(loopback(server.port), async () => undefined));
      expect(err.code).to.equal("NARWHAL_SSH_CONNECT");
      expect(err.message).to.equal(
        `ssh to flaky (127.0.0.1:${server.port}): the server closed the connection before login, after its SSH banner; ` +
          "check that sshd runs and accepts this client and user root (sshd's log on the host says why it dropped the connection)",
      );
      expect(seconds).to.be.below(5);
      await failure(withSsh(loopback(server.port), async () => undefined));
      expect(server.connections()).to.equal(2);
    } finally {
      await server.close();
    }
  });

  it("gives up after ssh.connectTimeoutS on a server that never speaks, naming where the login stopped", async () => {
    const server = await misbehavingServer(() => undefined);
    try {
      const { err, seconds } = await timedFailure(SshSession.open(loopback(server.port, { connectTimeoutS: 1 })));
      expect(err.code).to.equal("NARWHAL_SSH_TIMEOUT");
      expect(err.message).to.equal(
        `ssh to flaky (127.0.0.1:${server.port}): no SSH login within ssh.connectTimeoutS=1s (connected, but no SSH banner came); ` +
          `check that the host is up and sshd answers on port ${server.port}, or raise ssh.connectTimeoutS`,
      );
      expect(seconds).to.be.within(0.9, 3);
      await failure(SshSession.open(loopback(server.port, { connectTimeoutS: 1 })));
      expect(server.connections()).to.equal(2);
    } finally {
      await server.close();
    }
  });

  it("names the address when nothing listens", async () => {
    const server = await misbehavingServer(() => undefined);
    const port = server.port;
    await server.close();
    const err = await failure(SshSession.open(loopback(port)));
    expect(err.code).to.equal("NARWHAL_SSH_CONNECT");
    expect(err.message).to.match(new RegExp(`^ssh to flaky \\(127\\.0\\.0\\.1:${port}\\): login as root failed: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}; check the address`));
  });
});
