import { expect } from "chai";
import * as fs from "node:fs";
import { SshError, SshSession, SshTarget, withSsh } from "../../lib/ssh/client";
import { simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";

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
    const out = await withSsh(target(hosts[0]!), async (s) => [await s.run("hostname", { timeoutS: 10, name: "hostname" }), await s.run("echo $((6*7))", { timeoutS: 10, name: "sum" })]);
    expect(out.map((o) => o.trim())).to.deep.equal([hosts[0]!.alias, "42"]);
  });

  it("refuses a host whose key differs from the pin, naming both fingerprints", async () => {
    const [a, b] = hosts as [SimHost, SimHost];
    const err = await failure(SshSession.open(target(a, { hostKey: b.hostKey })));
    expect(err.code).to.equal("NARWHAL_SSH_HOST_KEY");
    expect(err.message).to.equal(
      `host ${a.alias}: the SSH host key changed (pinned ${b.fingerprint}, presented ${a.fingerprint}); nothing was run on it. ` +
        "If the host was legitimately reinstalled, update hosts[].hostKey (or clear the recorded key) and run again.",
    );
  });

  it("refuses first contact when the config does not allow it", async () => {
    const err = await failure(SshSession.open(target(hosts[0]!, { hostKey: undefined })));
    expect(err.message).to.equal(
      `host ${hosts[0]!.alias}: no pinned host key and ssh.allowFirstContact is false; pin hosts[].hostKey (the server presented ${hosts[0]!.fingerprint}) and run again.`,
    );
  });

  it("records the key on first contact when allowed", async () => {
    const key = await withSsh(target(hosts[0]!, { hostKey: undefined, allowFirstContact: true }), async (s) => s.hostKey);
    expect(key).to.deep.equal({ line: hosts[0]!.hostKey, fingerprint: hosts[0]!.fingerprint });
  });

  it("hops through a jump host, verifying both keys", async () => {
    const [a, b] = hosts as [SimHost, SimHost];
    const name = await withSsh(target(b, { jump: target(a) }), (s) => s.run("hostname", { timeoutS: 10, name: "hostname" }));
    expect(name.trim()).to.equal(b.alias);
    const err = await failure(SshSession.open(target(b, { jump: target(a, { hostKey: b.hostKey }) })));
    expect(err.code).to.equal("NARWHAL_SSH_HOST_KEY");
    expect(err.message).to.include(`host ${a.alias}:`);
  });

  it("names the step and its deadline when a command overruns", async () => {
    const err = await failure(withSsh(target(hosts[0]!), (s) => s.exec("sleep 5", { timeoutS: 1, name: "slow step" })));
    expect(err.message).to.equal(`host ${hosts[0]!.alias}: slow step did not finish within 1s`);
  });
});

describe("providers: SSH sessions per host", function () {
  this.timeout(60_000);

  it("logs in once for every session of an operation, and runs at most maxSessions commands at once", async () => {
    const { hosts } = await simUp({});
    const h = hosts[1]!;
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

  it("logs in afresh when the kept connection dropped", async () => {
    const { hosts } = await simUp({});
    const h = hosts[1]!;
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
