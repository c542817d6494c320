/**
 * The names providers keep logins under in state: read back into the one login shape, and written
 * exactly as stacks made before stored them.
 */
import { expect } from "chai";
import type { HostLogin } from "../../../lib/ssh/login";
import { readLogin, storedJump, storedLoginOf } from "../../../lib/ssh/stored-login";

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKey";
const JUMP_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJumpKey";
const BASTION: HostLogin = { alias: "bastion", host: "198.18.0.11", port: 2222, user: "hop", connectTimeoutS: 10 };

describe("ssh: logins read back from provider state", () => {
  it("reads host discovery's flat inputs: pinnedHostKey, and a bastion's pinnedHostKey", () => {
    const stored = { alias: "sim2", host: "198.18.0.12", port: 22, user: "root", pinnedHostKey: KEY, connectTimeoutS: 10, maxSessions: 4, jump: { alias: "bastion", host: "198.18.0.11", port: 2222, user: "hop", pinnedHostKey: JUMP_KEY } };
    expect(readLogin(stored, { privateKey: "PRIVATE", password: "" })).to.deep.equal({
      alias: "sim2",
      host: "198.18.0.12",
      port: 22,
      user: "root",
      hostKey: KEY,
      privateKey: "PRIVATE",
      password: undefined,
      connectTimeoutS: 10,
      maxSessions: 4,
      jump: { alias: "bastion", host: "198.18.0.11", port: 2222, user: "hop", hostKey: JUMP_KEY, privateKey: "PRIVATE", password: undefined, connectTimeoutS: 10 },
    });
  });

  it("reads an image check's login: no aliases, and an unpinned bastion", () => {
    const stored = { host: "198.18.0.12", port: 22, user: "root", hostKey: KEY, connectTimeoutS: 15, jump: { host: "198.18.0.11", port: 22, user: "root" } };
    const l = readLogin(stored, { alias: "sim2" });
    expect(l.alias).to.equal("sim2");
    expect(l.jump).to.deep.equal({ alias: "sim2-jump", host: "198.18.0.11", port: 22, user: "root", hostKey: undefined, privateKey: undefined, password: undefined, connectTimeoutS: 15 });
  });

  it("takes the key recorded elsewhere when the login pins none, but never over its own pin", () => {
    const edge = { host: "198.18.0.12", port: 22, user: "root", connectTimeoutS: 10, maxSessions: 4 };
    expect(readLogin(edge, { alias: "sim2", hostKey: KEY }).hostKey).to.equal(KEY);
    expect(readLogin({ ...edge, alias: "sim2", pinnedHostKey: KEY }, { hostKey: "ssh-ed25519 OTHER" }).hostKey).to.equal(KEY);
    expect(readLogin({ ...edge, alias: "sim2", hostKey: "" }).hostKey).to.equal(undefined);
    // Discovery's state holds both: the config's pin, and the key it recorded on first contact.
    expect(readLogin({ ...edge, alias: "sim2", pinnedHostKey: KEY, hostKey: JUMP_KEY }).hostKey).to.equal(KEY);
    expect(readLogin({ ...edge, alias: "sim2", hostKey: JUMP_KEY }).hostKey).to.equal(JUMP_KEY);
  });

  it("refuses a stored login it cannot name or bound", () => {
    expect(() => readLogin({ host: "h", port: 22, user: "root", connectTimeoutS: 10 })).to.throw("login root@h:22: no host alias to name it by");
    expect(() => readLogin({ alias: "a", host: "h", port: 22, user: "root" })).to.throw("host a: the stored login has no connectTimeoutS");
  });

  it("writes a bastion the way discovery and fabric edges have always stored it", () => {
    expect(storedJump({ ...BASTION, hostKey: JUMP_KEY })).to.deep.equal({ alias: "bastion", host: "198.18.0.11", port: 2222, user: "hop", pinnedHostKey: JUMP_KEY });
    expect(storedJump(undefined)).to.equal(undefined);
  });

  // The exact objects image checks, peer waves and the router's providers have always stored: another shape
  // would show every stack made before as changed.
  const CONNECTION = { host: "198.18.0.12", port: 2222, user: "ops", hostKey: KEY, perDialTimeout: 10, proxy: { host: "198.18.0.11", user: "hop", hostKey: JUMP_KEY } };

  it("writes an image check's login from its connection: no aliases", () => {
    expect(storedLoginOf(CONNECTION)).to.deep.equal({ host: "198.18.0.12", port: 2222, user: "ops", hostKey: KEY, connectTimeoutS: 10, jump: { host: "198.18.0.11", port: 22, user: "hop", hostKey: JUMP_KEY } });
    expect(storedLoginOf({ host: "h", proxy: { host: "j" } })).to.deep.equal({ host: "h", port: 22, user: "root", hostKey: "", connectTimeoutS: 15, jump: { host: "j", port: 22, user: "root" } });
  });

  it("writes the router's login from its connection: the alias, and <alias>-jump for the bastion", () => {
    expect(storedLoginOf(CONNECTION, "router")).to.deep.equal({
      alias: "router",
      host: "198.18.0.12",
      port: 2222,
      user: "ops",
      hostKey: KEY,
      connectTimeoutS: 10,
      jump: { alias: "router-jump", host: "198.18.0.11", port: 22, user: "hop", hostKey: JUMP_KEY },
    });
    expect(readLogin(storedLoginOf(CONNECTION, "router")).jump?.alias).to.equal("router-jump");
  });
});
