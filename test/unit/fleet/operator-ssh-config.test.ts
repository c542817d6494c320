import { expect } from "chai";
import { readOperatorSshConfig } from "../../../lib/fleet/operator-ssh-config";
import { resolveLogin } from "../../../lib/fleet/host-plan";
import type { SshConfigFiles } from "../../../lib/ssh/ssh-config/load";
import { accepted, variant } from "../config/fixtures";

const HOME = "/fixture/home";
const TOP = `${HOME}/.ssh/config`;

function filesOf(files: Record<string, string>): SshConfigFiles {
  const missing = (p: string) => Object.assign(new Error(`ENOENT: ${p}`), { code: "ENOENT" });
  return {
    readFile: (p) => {
      if (p in files) return files[p];
      throw missing(p);
    },
    listDir: (p) => {
      const names = Object.keys(files).filter((f) => f.startsWith(`${p}/`)).map((f) => f.slice(p.length + 1).split("/")[0]);
      if (!names.length) throw missing(p);
      return [...new Set(names)];
    },
  };
}

// Host b's destination is the ssh_config alias "gpu-b"; host a logs in as root@10.0.0.1 and never reads it.
const SPEC = accepted(variant((c) => (c.hosts[1].destination = "gpu-b")));
const read = (files: Record<string, string>) => readOperatorSshConfig(SPEC, { path: TOP, text: files[TOP], home: HOME, localUser: "op", files: filesOf(files) });

describe("fleet: the operator's ssh_config", () => {
  it("logs a host in through an alias its included file defines", () => {
    const { config, issues } = read({ [TOP]: "Include fleet.conf\n", [`${HOME}/.ssh/fleet.conf`]: "Host gpu-b\n  HostName 10.0.0.2\n  User ops\n  Port 2222\n" });
    expect(issues).to.deep.equal([]);
    const login = resolveLogin(SPEC, SPEC.hosts[1], config);
    expect([login.host, login.user, login.port]).to.deep.equal(["10.0.0.2", "ops", 2222]);
  });

  it("reports a Match exec that could apply to a fleet host as an issue at ssh.configFile naming the host", () => {
    const { issues } = read({ [TOP]: 'Match exec "on-vpn"\n  ProxyJump corp-gw\n' });
    expect(issues.map((i) => [i.path, i.message.split(":")[0]])).to.deep.equal([["ssh.configFile", "host b"]]);
    expect(issues[0].message).to.include('/fixture/home/.ssh/config line 1: "Match exec on-vpn" cannot be evaluated by this program');
  });

  it("reports an include cycle once, at ssh.configFile, without a config", () => {
    const { config, issues } = read({ [TOP]: "Include loop\n", [`${HOME}/.ssh/loop`]: "Include loop\n" });
    expect(config).to.equal(undefined);
    expect(issues).to.deep.equal([
      {
        path: "ssh.configFile",
        message: "/fixture/home/.ssh/loop line 1: Include loop reads /fixture/home/.ssh/loop again inside itself (/fixture/home/.ssh/config -> /fixture/home/.ssh/loop -> /fixture/home/.ssh/loop); remove one of these Include lines",
      },
    ]);
  });
});
