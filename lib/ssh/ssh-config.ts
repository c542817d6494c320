/**
 * The part of OpenSSH's client config a destination alias needs: HostName, User, Port, IdentityFile and
 * ProxyJump, resolved the way `ssh` does (first obtained value wins; `Host` patterns with `*`, `?` and
 * `!` negation). Operators who reach their GPU hosts through an alias keep using it here unchanged.
 */
export interface SshConfigEntry {
  readonly hostName?: string;
  readonly user?: string;
  readonly port?: number;
  readonly identityFile?: string;
  /** `user@host[:port]` or another alias; only the first hop of a comma list is kept per level. */
  readonly proxyJump?: string;
}

interface Block {
  readonly patterns: string[];
  readonly options: Array<[string, string]>;
}

function parseBlocks(text: string): Block[] {
  const blocks: Block[] = [{ patterns: ["*"], options: [] }];
  for (const raw of text.split("\n")) {
    const line = raw.replace(/#.*$/, "").trim();
    if (!line) continue;
    const m = /^(\S+)\s*(?:=\s*|\s+)(.+)$/.exec(line);
    if (!m) continue;
    const key = m[1]!.toLowerCase();
    const value = m[2]!.trim().replace(/^"(.*)"$/, "$1");
    if (key === "host") blocks.push({ patterns: value.split(/\s+/), options: [] });
    else if (key === "match") blocks.push({ patterns: [], options: [] }); // Match blocks are not evaluated.
    else blocks[blocks.length - 1]!.options.push([key, value]);
  }
  return blocks;
}

function globMatches(pattern: string, name: string): boolean {
  const re = new RegExp("^" + pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".") + "$");
  return re.test(name);
}

function blockMatches(patterns: string[], alias: string): boolean {
  let matched = false;
  for (const p of patterns) {
    if (p.startsWith("!")) {
      if (globMatches(p.slice(1), alias)) return false;
    } else if (globMatches(p, alias)) {
      matched = true;
    }
  }
  return matched;
}

/** Resolves `alias` against the text of an ssh_config file; `undefined` when no `Host` block names it. */
export function resolveSshAlias(configText: string, alias: string, home: string): SshConfigEntry | undefined {
  const found: Record<string, string> = {};
  let named = false;
  for (const block of parseBlocks(configText)) {
    if (!blockMatches(block.patterns, alias)) continue;
    if (!block.patterns.includes("*")) named = true;
    for (const [k, v] of block.options) if (!(k in found)) found[k] = v;
  }
  if (!named) return undefined;
  const expand = (p: string) => p.replace(/^~(?=\/)/, home).replace(/%h/g, found.hostname ?? alias).replace(/%d/g, home);
  return {
    hostName: found.hostname?.replace(/%h/g, alias),
    user: found.user,
    port: found.port ? Number(found.port) : undefined,
    identityFile: found.identityfile ? expand(found.identityfile) : undefined,
    proxyJump: found.proxyjump && found.proxyjump.toLowerCase() !== "none" ? found.proxyjump.split(",")[0]!.trim() : undefined,
  };
}
