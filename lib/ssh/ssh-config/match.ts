/**
 * When a `Host` or `Match` line applies to a host, as OpenSSH decides it (readconf.c, match.c): patterns
 * with `*` and `?`, a `!` pattern that matches vetoes the line, and Match criteria all have to hold.
 * Criteria this program cannot evaluate without running or resolving something (`exec`, `canonical`,
 * `final`, `localnetwork`, ...) are refused with the line and the fix, unless another criterion on the
 * same line already rules the host out, which is also when ssh would not run an `exec`.
 */
import { SshConfigError, type SshConfigLine } from "./parse";

function globMatches(pattern: string, name: string): boolean {
  const re = new RegExp("^" + pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".") + "$");
  return re.test(name);
}

/** ssh's match_pattern_list: true when a pattern matches and no negated one does. */
export function patternListMatches(patterns: readonly string[], name: string): boolean {
  let matched = false;
  for (const p of patterns) {
    if (p.startsWith("!")) {
      if (globMatches(p.slice(1), name)) return false;
    } else if (globMatches(p, name)) {
      matched = true;
    }
  }
  return matched;
}

/** What a Match line is judged against at the point ssh reads it. */
export interface MatchSubject {
  /** The name given to ssh (the alias). */
  readonly originalHost: string;
  /** HostName obtained so far (with %h expanded), else the alias. */
  readonly host: string;
  /** User obtained so far, else the local user. */
  readonly user: string;
  readonly localUser: string;
}

export interface MatchResult {
  readonly applies: boolean;
  /** A host or originalhost criterion matched the host by name (not a negation, not `all`). */
  readonly namesHost: boolean;
}

const NOT_EVALUATED = new Set(["exec", "canonical", "final", "localnetwork", "tagged", "version", "sessiontype", "command", "address", "localaddress", "localport", "rdomain"]);
const WITHOUT_ARGUMENT = new Set(["all", "canonical", "final"]);

/**
 * @param matters whether the block under the line sets anything this program reads; a block that does not
 * is never refused, since whether it applies changes nothing
 */
export function matchLineApplies(line: SshConfigLine, file: string, subject: MatchSubject, matters = true): MatchResult {
  const where = `${file} line ${line.line}`;
  const args = [...line.args];
  if (args.length === 0) throw new SshConfigError(`${where}: Match needs at least one criterion, e.g. "Match host gpu-*"`);
  let applies = true;
  let namesHost = false;
  const refused: string[] = [];
  while (args.length) {
    const raw = args.shift()!;
    const negate = raw.startsWith("!");
    const criterion = raw.slice(negate ? 1 : 0).toLowerCase();
    if (criterion === "all") {
      if (args.length || line.args.filter((a) => !["canonical", "final", "!canonical", "!final"].includes(a.toLowerCase())).length > 1) {
        throw new SshConfigError(`${where}: "all" cannot be combined with other Match criteria; write "Match all" alone`);
      }
      if (negate) applies = false;
      continue;
    }
    const value = WITHOUT_ARGUMENT.has(criterion) ? undefined : args.shift();
    if (!WITHOUT_ARGUMENT.has(criterion) && !value) throw new SshConfigError(`${where}: Match ${raw} needs a value, e.g. "Match ${raw} gpu-*"`);
    const patterns = value?.split(",") ?? [];
    let held: boolean;
    switch (criterion) {
      case "host":
        held = patternListMatches(patterns, subject.host);
        break;
      case "originalhost":
        held = patternListMatches(patterns, subject.originalHost);
        break;
      case "user":
        held = patternListMatches(patterns, subject.user);
        break;
      case "localuser":
        held = patternListMatches(patterns, subject.localUser);
        break;
      default:
        if (!NOT_EVALUATED.has(criterion)) throw new SshConfigError(`${where}: Match ${raw} is not a criterion ssh knows; see ssh_config(5)`);
        refused.push(value === undefined ? raw : `${raw} ${value}`);
        continue;
    }
    if (held === negate) applies = false;
    else if (!negate && (criterion === "host" || criterion === "originalhost")) namesHost = true;
  }
  if (applies && refused.length) {
    if (!matters) return { applies: false, namesHost: false };
    throw new SshConfigError(
      `${where}: "Match ${refused.join(" ")}" cannot be evaluated by this program (it would run a command or resolve the network), and no other criterion on the line rules host ${subject.originalHost} out; ` +
        `give the host as "user@address" in the stack config so its ssh_config entry is not read, add a "host" or "originalhost" criterion that excludes it, or point ssh.configFile at a config without this block`,
    );
  }
  return { applies, namesHost: applies && namesHost };
}
