/**
 * SSH credentials of the simulated fleet: the harness's login key (generated once), each host's own
 * host key, the `narwhal` user's password, and the OpenSSH client files (known_hosts, config) that
 * point at them.
 */
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { PASSWORD_USER, SIM_DIR, SSH_PORT, SSH_USER } from "./constants";
import { run } from "./exec";
import { authorizedKeysFile, knownHostsFile, passwordFile, privateKeyFile, publicKeyFile, sshConfigFile, sshDir } from "./paths";

/** Creates an ed25519 key pair at `file` (and `file.pub`) unless one is there already. */
async function ensureKeyPair(file: string, comment: string): Promise<void> {
  if (fs.existsSync(file) && fs.existsSync(`${file}.pub`)) return;
  fs.rmSync(file, { force: true });
  fs.rmSync(`${file}.pub`, { force: true });
  await run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file], { what: `generate key ${file}` });
}

/**
 * The harness's login key plus a world-readable authorized_keys: sshd reads that file as the user who
 * logs in, so it must be readable by `narwhal` too. .sim/ itself stays traversable for the same reason.
 */
export async function ensureHarnessKeys(): Promise<void> {
  fs.mkdirSync(sshDir(), { recursive: true, mode: 0o700 });
  fs.chmodSync(SIM_DIR, 0o755);
  await ensureKeyPair(privateKeyFile(), "narwhal-sim-harness");
  fs.writeFileSync(authorizedKeysFile(), fs.readFileSync(publicKeyFile()), { mode: 0o644 });
  fs.chmodSync(authorizedKeysFile(), 0o644);
}

export async function ensureHostKey(file: string, alias: string): Promise<void> {
  await ensureKeyPair(file, `root@${alias}`);
}

/** Replaces a host's key with a fresh one (for the changed-host-key tests). */
export async function regenerateHostKey(file: string, alias: string): Promise<void> {
  fs.rmSync(file, { force: true });
  fs.rmSync(`${file}.pub`, { force: true });
  await ensureKeyPair(file, `root@${alias}`);
}

/** "ssh-ed25519 AAAA..." without the comment. */
export function readPublicKeyLine(pubFile: string): string {
  const [type, blob] = fs.readFileSync(pubFile, "utf8").trim().split(/\s+/);
  return `${type} ${blob}`;
}

/** OpenSSH's SHA256 fingerprint of a public key line: base64 of the blob's digest, unpadded. */
export function fingerprintOf(keyLine: string): string {
  const blob = Buffer.from(keyLine.trim().split(/\s+/)[1], "base64");
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

/** The `narwhal` user's password: generated once, kept in .sim/narwhal-password (mode 0600). */
export function ensurePassword(): string {
  const file = passwordFile();
  if (!fs.existsSync(file)) fs.writeFileSync(file, `${randomBytes(12).toString("base64url")}\n`, { mode: 0o600 });
  return fs.readFileSync(file, "utf8").trim();
}

/** SHA-512 crypt hash for /etc/shadow, made by openssl (node has no crypt(3)). */
export async function hashPassword(password: string): Promise<string> {
  const out = await run(["openssl", "passwd", "-6", "-stdin"], { input: `${password}\n`, what: "hash the narwhal password" });
  return out.stdout.trim();
}

export interface KnownHost {
  alias: string;
  address: string;
  hostKey: string;
}

/** Writes .sim/ssh/known_hosts and .sim/ssh/config so `ssh -F .sim/ssh/config sim1` logs in. */
export function writeClientFiles(hosts: readonly KnownHost[]): void {
  const sorted = [...hosts].sort((a, b) => a.address.localeCompare(b.address, undefined, { numeric: true }));
  // `sim down` also gets here, and must work after the .sim folder was removed by hand.
  fs.mkdirSync(path.dirname(knownHostsFile()), { recursive: true });
  fs.writeFileSync(knownHostsFile(),  sorted.map((h) => `${h.address} ${h.hostKey}\n`).join(""));
  const blocks = sorted.map((h) =>
    [
      `Host ${h.alias}`,
      `  HostName ${h.address}`,
      `  Port ${SSH_PORT}`,
      `  User ${SSH_USER}`,
      `  IdentityFile ${privateKeyFile()}`,
      "  IdentitiesOnly yes",
      `  UserKnownHostsFile ${knownHostsFile()}`,
      "  StrictHostKeyChecking yes",
      "",
    ].join("\n"),
  );
  const header = `# Written by sim/hosts (sim up). Password logins: user ${PASSWORD_USER}, password in ${path.relative(
    path.dirname(sshConfigFile()),
    passwordFile(),
  )}.\n\n`;
  fs.writeFileSync(sshConfigFile(), header + blocks.join("\n"));
}
