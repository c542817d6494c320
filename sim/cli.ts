/**
 * `npm run sim -- <command>`: the simulated fleet from the command line (root only).
 *
 *   up     [--hosts N] [--layout ALIAS=LAYOUT]... [--topology FILE] [--time-scale X] [--json]
 *   down   [--host ALIAS]... [--json]        (no --host: everything, bridge and FORWARD rule included)
 *   status [--json]
 *   exec   ALIAS -- COMMAND [ARGS...]        (runs inside the host's namespaces, no SSH)
 */
import * as path from "node:path";
import { parseArgs } from "node:util";
import { PROJECT_ROOT } from "./hosts/constants";
import { runInHost, simDown, simStatus, simUp } from "./hosts";
import type { SimFleet, SimStatus } from "./hosts";

const USAGE = `usage: npm run sim -- <up|down|status|exec> [options]
  up     [--hosts N] [--layout ALIAS=LAYOUT]... [--topology FILE] [--time-scale X] [--json]
         LAYOUT is <model>:<count> (h100:2, mi300x:2) or none
  down   [--host ALIAS]... [--json]
  status [--json]
  exec   ALIAS -- COMMAND [ARGS...]`;

class UsageError extends Error {}

const rel = (p: string) => path.relative(process.cwd(), p) || ".";

function parseLayouts(values: string[] | undefined): Record<string, string> {
  const layouts: Record<string, string> = {};
  for (const v of values ?? []) {
    const [alias, layout] = v.split("=");
    if (!alias || !layout) throw new UsageError(`--layout ${v}: expected ALIAS=LAYOUT, e.g. --layout sim4=none`);
    layouts[alias] = layout;
  }
  return layouts;
}

function positiveNumber(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${flag} ${value}: expected a positive number`);
  return n;
}

function printFleet(fleet: SimFleet): void {
  for (const h of fleet.hosts) {
    console.log(`${h.alias.padEnd(6)} ${h.address.padEnd(13)} ${h.layout.padEnd(9)} ${fleet.actions[h.alias]}`);
  }
  console.log(`fleet up in ${(fleet.elapsedMs / 1000).toFixed(1)} s; log in with: ssh -F ${rel(fleet.sshConfigPath)} ${fleet.hosts[0]?.alias ?? "sim1"}`);
}

function printStatus(s: SimStatus): void {
  const rule = s.bridge.forwardRule ? "FORWARD rule present" : "no FORWARD rule";
  console.log(`bridge ${s.bridge.name}: ${s.bridge.exists ? "present" : "absent"}, ${rule}`);
  if (s.hosts.length === 0) console.log("no hosts (run `npm run sim -- up`)");
  else console.log(`${"ALIAS".padEnd(6)} ${"ADDRESS".padEnd(13)} ${"PORT".padEnd(4)} ${"LAYOUT".padEnd(9)} ${"SSHD".padEnd(8)} HOST KEY`);
  for (const h of s.hosts) {
    const sshd = h.sshBanner ? "answers" : h.sshdPid ? "silent" : "down";
    console.log(`${h.alias.padEnd(6)} ${h.address.padEnd(13)} ${String(h.sshPort).padEnd(4)} ${h.layout.padEnd(9)} ${sshd.padEnd(8)} ${h.fingerprint}`);
  }
  if (s.strayNetns.length > 0) console.log(`stray namespaces (removed by down): ${s.strayNetns.join(", ")}`);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === "exec") {
    const sep = rest.indexOf("--");
    const alias = rest[0];
    const cmd = sep >= 0 ? rest.slice(sep + 1) : rest.slice(1);
    if (!alias || alias === "--" || cmd.length === 0) throw new UsageError("exec: expected ALIAS -- COMMAND [ARGS...]");
    const r = await runInHost(alias, cmd, { allowFail: true });
    process.stdout.write(r.stdout);
    process.stderr.write(r.stderr);
    process.exitCode = r.code;
    return;
  }
  const { values } = parseArgs({
    args: rest,
    options: {
      hosts: { type: "string" },
      layout: { type: "string", multiple: true },
      topology: { type: "string" },
      "time-scale": { type: "string" },
      host: { type: "string", multiple: true },
      json: { type: "boolean", default: false },
    },
    strict: true,
  });
  switch (command) {
    case "up": {
      const hosts = values.hosts === undefined ? undefined : Number(values.hosts);
      if (hosts !== undefined && (!Number.isInteger(hosts) || hosts < 1)) throw new UsageError(`--hosts ${values.hosts}: expected a positive integer`);
      const fleet = await simUp({
        hosts,
        layouts: parseLayouts(values.layout),
        topologyFile: values.topology,
        timeScale: positiveNumber("--time-scale", values["time-scale"]),
      });
      if (values.json) console.log(JSON.stringify(fleet, null, 2));
      else printFleet(fleet);
      return;
    }
    case "down": {
      const result = await simDown({ aliases: values.host });
      if (values.json) console.log(JSON.stringify(result, null, 2));
      else {
        const what = result.removedHosts.length ? result.removedHosts.join(", ") : "no hosts";
        console.log(`removed ${what}${result.bridgeRemoved ? ", bridge and FORWARD rule" : ""} in ${(result.elapsedMs / 1000).toFixed(1)} s`);
      }
      return;
    }
    case "status": {
      const status = await simStatus();
      if (values.json) console.log(JSON.stringify(status, null, 2));
      else printStatus(status);
      return;
    }
    default:
      throw new UsageError(command ? `unknown command "${command}"` : "no command given");
  }
}

if (process.getuid?.() !== 0) {
  console.error("sim: the simulated fleet needs root (network namespaces, bridge, iptables)");
  process.exitCode = 1;
} else {
  process.chdir(PROJECT_ROOT);
  main(process.argv.slice(2)).catch((err: Error) => {
    console.error(`sim: ${err.message}`);
    const usage = err instanceof UsageError || String((err as { code?: string }).code).startsWith("ERR_PARSE_ARGS");
    if (usage) console.error(USAGE);
    process.exitCode = usage ? 2 : 1;
  });
}
