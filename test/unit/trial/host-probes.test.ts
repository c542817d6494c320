/** The trial's host probes over the provider's logins (lib/trial/host-probes.ts): one login per other host, closed, every script noted. */
import { expect } from "chai";
import type { SshSession } from "../../../lib/ssh/client";
import type { EvidenceCommand } from "../../../lib/evidence/record";
import { hostProbes } from "../../../lib/trial/host-probes";
import { SOCKETS_SCRIPT } from "../../../lib/trial/record";

function session(name: string, stdout: (script: string) => string, closed: string[]): SshSession {
  return { exec: async (script: string) => ({ code: 0, stdout: stdout(script), stderr: "" }), close: () => closed.push(name) } as unknown as SshSession;
}

describe("trial: host probes", () => {
  const closed: string[] = [];
  const commands: EvidenceCommand[] = [];
  const routerSession = session("sim1", (s) => (s === SOCKETS_SCRIPT ? "router sockets" : "4242 1 narwhal-router --port 8000"), closed);
  const probes = hostProbes(
    { router: { alias: "sim1", session: routerSession, port: 8000, pid: 4242 }, hosts: [{ alias: "sim1" }, { alias: "sim2" }], login: async (h) => session(h.alias, () => `${h.alias} sockets`, closed) },
    commands,
  );

  it("reads every host's sockets, the router host's over its own login, and closes only the logins it opened", async () => {
    expect(await probes.sockets()).to.deep.equal({ sim1: "router sockets", sim2: "sim2 sockets" });
    expect(closed).to.deep.equal(["sim2"]);
    expect(commands.map((c) => [c.host, c.argv?.[2] === SOCKETS_SCRIPT, c.exitStatus])).to.deep.equal([["sim1", true, 0], ["sim2", true, 0]]);
  });

  it("finds the router itself on its port, and notes the check", async () => {
    expect(await probes.listener()).to.equal(undefined);
    expect(commands[commands.length - 1].host).to.equal("sim1");
  });
});
