/**
 * The one login shape, and the one policy for keys nobody pinned yet (host and bastion, for each purpose
 * a login is made for).
 */
import { expect } from "chai";
import { firstContact, sshTarget, type HostLogin, type LoginPurpose } from "../../../lib/ssh/login";

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKey";
const JUMP_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJumpKey";
const BASTION: HostLogin = { alias: "bastion", host: "198.18.0.11", port: 2222, user: "hop", connectTimeoutS: 10 };
const HOST: HostLogin = { alias: "sim2", host: "198.18.0.12", port: 22, user: "root", connectTimeoutS: 10, maxSessions: 4, privateKey: "PRIVATE", password: "PW" };

function login(hostPinned: boolean, jump: "none" | "pinned" | "unpinned"): HostLogin {
  return {
    ...HOST,
    ...(hostPinned ? { hostKey: KEY } : {}),
    ...(jump === "none" ? {} : { jump: { ...BASTION, ...(jump === "pinned" ? { hostKey: JUMP_KEY } : {}) } }),
  };
}

const DISCOVER: LoginPurpose = { kind: "discover", allowFirstContact: true };
const DISCOVER_STRICT: LoginPurpose = { kind: "discover", allowFirstContact: false };
const OPERATE: LoginPurpose = { kind: "operate" };
const PREVIEW: LoginPurpose = { kind: "pinned", why: "a preview makes no first contact" };

const OPERATE_UNPINNED = "host sim2: no verified host key to log in with; it comes from the host's discovery, so run pulumi up --refresh to record it again.";
const PREVIEW_HOST = "host sim2: no pinned host key, and a preview makes no first contact; pin hosts[].hostKey and run again.";
const PREVIEW_JUMP =
  "host sim2: its bastion bastion (hop@198.18.0.11:2222) has no pinned host key, and a preview makes no first contact; " +
  "make the bastion a host of the fleet with hosts[].hostKey pinned and run again.";

describe("ssh: first contact, decided in one place", () => {
  // [purpose, host pinned, bastion, what may be learned (or the refusal)]
  const table: Array<[string, LoginPurpose, boolean, "none" | "pinned" | "unpinned", { host: boolean; jump: boolean } | string]> = [
    ["discover, first contact allowed", DISCOVER, true, "pinned", { host: false, jump: false }],
    ["discover, first contact allowed", DISCOVER, false, "pinned", { host: true, jump: false }],
    ["discover, first contact allowed", DISCOVER, true, "unpinned", { host: false, jump: true }],
    ["discover, first contact allowed", DISCOVER, false, "unpinned", { host: true, jump: true }],
    ["discover, first contact allowed", DISCOVER, false, "none", { host: true, jump: false }],
    ["discover, first contact not allowed", DISCOVER_STRICT, true, "pinned", { host: false, jump: false }],
    ["discover, first contact not allowed", DISCOVER_STRICT, false, "unpinned", { host: false, jump: false }],
    ["operate", OPERATE, true, "pinned", { host: false, jump: false }],
    ["operate", OPERATE, true, "unpinned", { host: false, jump: true }],
    ["operate", OPERATE, true, "none", { host: false, jump: false }],
    ["operate", OPERATE, false, "pinned", OPERATE_UNPINNED],
    ["operate", OPERATE, false, "unpinned", OPERATE_UNPINNED],
    ["pinned only", PREVIEW, true, "pinned", { host: false, jump: false }],
    ["pinned only", PREVIEW, true, "none", { host: false, jump: false }],
    ["pinned only", PREVIEW, true, "unpinned", PREVIEW_JUMP],
    ["pinned only", PREVIEW, false, "pinned", PREVIEW_HOST],
    ["pinned only", PREVIEW, false, "unpinned", PREVIEW_HOST],
  ];
  for (const [purpose, p, hostPinned, jump, expected] of table) {
    it(`${purpose}: host ${hostPinned ? "pinned" : "unpinned"}, bastion ${jump}`, () => {
      const l = login(hostPinned, jump);
      if (typeof expected === "string") {
        expect(() => firstContact(l, p)).to.throw(expected).with.property("code", "NARWHAL_SSH_HOST_KEY");
        expect(() => sshTarget(l, p)).to.throw(expected);
      } else {
        expect(firstContact(l, p)).to.deep.equal(expected);
        const t = sshTarget(l, p);
        expect(t.allowFirstContact).to.equal(expected.host);
        expect(t.jump?.allowFirstContact).to.equal(jump === "none" ? undefined : expected.jump);
      }
    });
  }
});

describe("ssh: sshTarget", () => {
  it("keeps the login and gives a bastion without credentials of its own the host's", () => {
    expect(sshTarget({ ...login(true, "pinned"), identityFile: "/fixture/home/.ssh/id" }, OPERATE)).to.deep.equal({
      alias: "sim2",
      host: "198.18.0.12",
      port: 22,
      user: "root",
      hostKey: KEY,
      privateKey: "PRIVATE",
      password: "PW",
      connectTimeoutS: 10,
      maxSessions: 4,
      allowFirstContact: false,
      jump: {
        alias: "bastion",
        host: "198.18.0.11",
        port: 2222,
        user: "hop",
        hostKey: JUMP_KEY,
        privateKey: "PRIVATE",
        password: "PW",
        agentSocket: undefined,
        connectTimeoutS: 10,
        maxSessions: undefined,
        allowFirstContact: false,
      },
    });
  });

  it("logs in to a bastion with its own credentials when it has them", () => {
    const t = sshTarget({ ...login(true, "pinned"), jump: { ...BASTION, hostKey: JUMP_KEY, password: "HOP" } }, OPERATE);
    expect(t.jump).to.include({ privateKey: "PRIVATE", password: "HOP" });
  });
});
