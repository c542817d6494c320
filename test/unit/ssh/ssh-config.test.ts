import { expect } from "chai";
import { resolveSshAlias } from "../../../lib/ssh/ssh-config";

const CONFIG = `
# operators' usual layout
Host bastion
  HostName 198.18.0.11
  User jump

Host gpu-*  !gpu-legacy
  User ops
  Port 2222
  IdentityFile ~/.ssh/fleet_ed25519
  ProxyJump bastion

Host gpu-a
  HostName 198.18.0.12
  User root

Host gpu-legacy
  HostName=198.18.0.99

Host *
  User nobody
  ServerAliveInterval 30
`;

describe("ssh: ssh_config aliases", () => {
  it("takes the first obtained value, as ssh does", () => {
    expect(resolveSshAlias(CONFIG, "gpu-a", "/home/op")).to.deep.equal({
      hostName: "198.18.0.12",
      user: "ops", // the gpu-* block comes first in the file, so its User wins over gpu-a's
      port: 2222,
      identityFile: "/home/op/.ssh/fleet_ed25519",
      proxyJump: "bastion",
    });
  });

  it("honours negated patterns and key=value syntax", () => {
    expect(resolveSshAlias(CONFIG, "gpu-legacy", "/h")).to.deep.equal({
      hostName: "198.18.0.99",
      user: "nobody",
      port: undefined,
      identityFile: undefined,
      proxyJump: undefined,
    });
  });

  it("says nothing about a name no Host block names", () => {
    expect(resolveSshAlias(CONFIG, "198.18.0.13", "/h")).to.equal(undefined);
  });
});
