/** Rules over `hosts`: unique aliases, login user, fabric interface, pinned keys, jump routes. */
import { ALIAS_PATTERN, parseDestination } from "../formats";
import { absent, danglingReferences, isUnknownAlias, reportDuplicates, unknownAliasMessage, type Rule } from "./context";

export const hostRules: Rule = (ctx, report) => {
  const dangling = danglingReferences(ctx, (s) => ALIAS_PATTERN.test(s));
  reportDuplicates(
    ctx.rawAliases,
    (i) => ["hosts", i, "alias"],
    (alias, first) => `"${alias}" is already the alias of hosts[${first}]; give every host its own alias${danglingHint(dangling)}`,
    report,
  );

  ctx.hosts.forEach((host, i) => {
    const { user, destination, alias } = host.value;
    const name = alias ?? ctx.rawAliases[i] ?? `hosts[${i}]`;

    // Two different users for one login is a typo either way; refuse rather than pick one.
    const login = destination === undefined ? undefined : parseDestination(destination, false);
    if (user !== undefined && login?.ok && login.value.user !== undefined && login.value.user !== user) {
      report(
        ["hosts", i, "user"],
        `"${user}" differs from the user "${login.value.user}" in destination "${destination}"; remove one of them`,
      );
    }

    if (absent(host, "fabricInterface") && absent(ctx.fabric, "interface")) {
      report(
        ["hosts", i, "fabricInterface"],
        `missing for host ${name}, and fabric.interface is not set; set hosts[${i}].fabricInterface or fabric.interface ` +
          `to the interface that carries engine traffic (e.g. "eth1")`,
      );
    }

    if (ctx.ssh.value.allowFirstContact === false && absent(host, "hostKey")) {
      report(
        ["hosts", i, "hostKey"],
        `missing for host ${name}, and ssh.allowFirstContact is false; pin the host's public key ` +
          `(e.g. "ssh-ed25519 AAAA…" from /etc/ssh/ssh_host_ed25519_key.pub) or set ssh.allowFirstContact to true`,
      );
    }

    const jump = host.value.jump;
    if (jump !== undefined && ALIAS_PATTERN.test(jump) && isUnknownAlias(ctx, jump)) {
      report(["hosts", i, "jump"], `${unknownAliasMessage(ctx, jump)}; for a machine outside the fleet write "user@host[:port]"`);
    }
  });

  reportJumpCycles(ctx, report);
};

/**
 * A jump chain that comes back to a host already on it never reaches anything. Each loop is reported
 * once, at its member listed first in `hosts`.
 */
const reportJumpCycles: Rule = (ctx, report) => {
  const jumpOf = new Map<string, { index: number; jump?: string }>();
  ctx.hosts.forEach((host, i) => {
    const alias = ctx.rawAliases[i];
    if (alias !== undefined && !jumpOf.has(alias)) jumpOf.set(alias, { index: i, jump: host.value.jump });
  });

  const reported = new Set<string>();
  for (const start of jumpOf.keys()) {
    const chain: string[] = [];
    let current: string | undefined = start;
    while (current !== undefined && jumpOf.has(current) && !chain.includes(current)) {
      chain.push(current);
      current = jumpOf.get(current)!.jump;
    }
    if (current === undefined || !chain.includes(current)) continue;

    const loop = chain.slice(chain.indexOf(current));
    const key = [...loop].sort().join(" ");
    if (reported.has(key)) continue;
    reported.add(key);
    // Render the loop from the member that comes first in hosts, so the message does not depend on
    // where the walk happened to start.
    const firstIndex = Math.min(...loop.map((a) => jumpOf.get(a)!.index));
    const firstAlias = loop.find((a) => jumpOf.get(a)!.index === firstIndex)!;
    const rotated = [...loop.slice(loop.indexOf(firstAlias)), ...loop.slice(0, loop.indexOf(firstAlias)), firstAlias];
    report(
      ["hosts", firstIndex, "jump"],
      `jump chain ${rotated.join(" -> ")} loops and never reaches a host; remove the jump of one of these hosts`,
    );
  }
};

/**
 * With a duplicate alias, a reference to an alias no host has is usually the duplicated host's intended
 * alias: say so in the one fix instead of asking for the references to move.
 */
function danglingHint(dangling: ReadonlyArray<{ path: string; alias: string }>): string {
  if (dangling.length === 0) return "";
  const named = dangling.map((d) => `${d.path} names "${d.alias}"`);
  const aliases = [...new Set(dangling.map((d) => `"${d.alias}"`))];
  return ` (${named.join(", ")}, which no host has: if this host is ${aliases.join(" or ")}, that fixes both)`;
}
