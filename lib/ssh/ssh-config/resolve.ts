/**
 * The part of OpenSSH's client config a destination alias needs: HostName, User, Port, IdentityFile and
 * ProxyJump, resolved the way `ssh` does: lines are read in order through `Include`d files, the first
 * obtained value of each keyword wins, and a `Host` or `Match` line starts a block that lasts until the
 * next one. An included file starts in the including block's state, and what its own Host/Match lines
 * decide ends with it; a file included from a block that does not apply applies to nothing.
 * Operators who reach their GPU hosts through an alias keep using it here unchanged.
 */
import type { SshConfigFile } from "./load";
import { matchLineApplies, patternListMatches, type MatchSubject } from "./match";

export interface SshConfigEntry {
  readonly hostName?: string;
  readonly user?: string;
  readonly port?: number;
  readonly identityFile?: string;
  /** `user@host[:port]` or another alias; only the first hop of a comma list is kept per level. */
  readonly proxyJump?: string;
}

/** A loaded config and what its Match lines need to know about this machine. */
export interface SshConfig {
  readonly root: SshConfigFile;
  readonly home: string;
  /** `Match localuser`, and `Match user` before any User is obtained. */
  readonly localUser: string;
}

/** The keywords read here; a block without them (or an Include) cannot change the result. */
const READ = new Set(["hostname", "user", "port", "identityfile", "proxyjump"]);

function blockSetsRead(file: SshConfigFile, from: number): boolean {
  for (let i = from + 1; i < file.lines.length; i++) {
    const k = file.lines[i].keyword;
    if (k === "host" || k === "match") return false;
    if (READ.has(k) || k === "include") return true;
  }
  return false;
}

interface Walk {
  readonly alias: string;
  readonly config: SshConfig;
  readonly found: Map<string, string>;
  named: boolean;
}

/** Reads `file` starting in `startActive`; under `neverMatch` (an include from a block that does not apply) nothing in it applies. */
function walk(file: SshConfigFile, w: Walk, startActive: boolean, neverMatch: boolean): void {
  let active = startActive;
  file.lines.forEach((line, index) => {
    if (line.keyword === "host") {
      const applies = !neverMatch && patternListMatches(line.args, w.alias);
      if (applies && line.args.some((p) => p !== "*" && !p.startsWith("!"))) w.named = true;
      active = applies;
    } else if (line.keyword === "match") {
      if (neverMatch) {
        active = false;
        return;
      }
      const hostName = w.found.get("hostname");
      const subject: MatchSubject = {
        originalHost: w.alias,
        host: hostName ? hostName.replace(/%h/g, w.alias) : w.alias,
        user: w.found.get("user") ?? w.config.localUser,
        localUser: w.config.localUser,
      };
      const result = matchLineApplies(line, file.path, subject, blockSetsRead(file, index));
      if (result.namesHost) w.named = true;
      active = result.applies;
    } else if (line.keyword === "include") {
      // ssh restores the including block's state afterwards: a Match inside an include ends with it.
      for (const inc of line.included ?? []) walk(inc, w, active, neverMatch || !active);
    } else if (active && line.args.length && !w.found.has(line.keyword)) {
      w.found.set(line.keyword, line.args[0]);
    }
  });
}

/** Resolves `alias` against a loaded ssh_config; `undefined` when no `Host` or `Match host` line names it. */
export function resolveSshAlias(config: SshConfig, alias: string): SshConfigEntry | undefined {
  const w: Walk = { alias, config, found: new Map(), named: false };
  walk(config.root, w, true, false);
  if (!w.named) return undefined;
  const get = (k: string) => w.found.get(k);
  const hostName = get("hostname");
  const expand = (p: string) => p.replace(/^~(?=\/)/, config.home).replace(/%h/g, hostName ?? alias).replace(/%d/g, config.home);
  const proxyJump = get("proxyjump");
  return {
    hostName: hostName?.replace(/%h/g, alias),
    user: get("user"),
    port: get("port") ? Number(get("port")) : undefined,
    identityFile: get("identityfile") ? expand(get("identityfile")!) : undefined,
    proxyJump: proxyJump && proxyJump.toLowerCase() !== "none" ? proxyJump.split(",")[0].trim() : undefined,
  };
}
