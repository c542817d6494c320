/**
 * The /etc files a simulated host sees instead of the machine's own (bind-mounted in its mount
 * namespace, so the machine's /etc is never edited):
 *   hostname, machine-id  the host's identity
 *   passwd, group, shadow the machine's accounts plus `narwhal` (uid 1500, home /home/narwhal), whose
 *                         password logins only hosts with passwordAuth accept
 * and the home folders: /home (with narwhal's) and a fresh /root made from /etc/skel.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { PASSWORD_USER, PASSWORD_USER_UID } from "./constants";
import type { HostPaths } from "./paths";

/** Files bind-mounted over /etc/<name>; each is skipped when the machine lacks the target. */
export const ETC_OVERRIDES = ["hostname", "machine-id", "passwd", "group", "shadow"] as const;

/** Drops an existing `narwhal` line, so rewriting is idempotent. */
function withoutUser(text: string): string {
  return text
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith(`${PASSWORD_USER}:`))
    .map((l) => `${l}\n`)
    .join("");
}

/**
 * sshd without PAM refuses even key logins to a locked account ("!" password), so root's entry is
 * normalised to "*" (no password, not locked) in the host's copy.
 */
function unlockRoot(shadow: string): string {
  return shadow.replace(/^root:!+[^:]*:/m, "root:*:");
}

export function writeEtc(p: HostPaths, alias: string, passwordHash: string): void {
  fs.mkdirSync(p.etcDir, { recursive: true });
  const days = Math.floor(Date.now() / 86_400_000);
  const uid = PASSWORD_USER_UID;
  const files: Record<(typeof ETC_OVERRIDES)[number], string> = {
    hostname: `${alias}\n`,
    "machine-id": `${createHash("md5").update(`narwhal-sim/${alias}`).digest("hex")}\n`,
    passwd: withoutUser(fs.readFileSync("/etc/passwd", "utf8")) + `${PASSWORD_USER}:x:${uid}:${uid}:Narwhal sim user:/home/${PASSWORD_USER}:/bin/bash\n`,
    group: withoutUser(fs.readFileSync("/etc/group", "utf8")) + `${PASSWORD_USER}:x:${uid}:\n`,
    shadow: unlockRoot(withoutUser(fs.readFileSync("/etc/shadow", "utf8"))) + `${PASSWORD_USER}:${passwordHash}:${days}:0:99999:7:::\n`,
  };
  for (const [name, text] of Object.entries(files)) {
    fs.writeFileSync(path.join(p.etcDir, name), text, { mode: name === "shadow" ? 0o640 : 0o644 });
  }
  const home = path.join(p.homeDir, PASSWORD_USER);
  fs.mkdirSync(home, { recursive: true });
  fs.chownSync(home, uid, uid);
  fs.chmodSync(p.homeDir, 0o755);
  writeRootHome(p.rootHome);
}

/** A root home like a fresh Debian host's: /etc/skel's dotfiles, nothing from the machine's /root. */
function writeRootHome(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const name of [".bashrc", ".profile"]) {
    const skel = path.join("/etc/skel", name);
    const target = path.join(dir, name);
    if (fs.existsSync(skel) && !fs.existsSync(target)) fs.copyFileSync(skel, target);
  }
}
