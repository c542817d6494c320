/**
 * What one CLI run costs this program against Pulumi's own floor, at two fleet sizes.
 *
 *   npm run bench:cli [-- --rounds 3] [--sizes 4x2,16x4]
 *
 * Per size (engines x hosts, on hosts of the benchmark's own: sim21..), deploys stack `bench-cli-<n>`
 * with the e2e stack's config and the floor program (bench/floor, unchanged) with as many resources, then
 * runs, round after round and each one right after the other so both see the same machine: no-change
 * `preview`, `up` and `preview --refresh` of the fleet and of the floor. The floor runs as Pulumi runs a
 * TypeScript program by default (ts-node, type-checked), and once more with
 * PULUMI_NODEJS_TRANSPILE_ONLY=true, the cheapest a TypeScript program gets without a build step; ratios
 * are given against both. Each figure is the median of the rounds, wall seconds and CPU seconds (the CLI
 * and every process under it). `programLoad` is the time to load the program's modules (node, warm
 * cache) through tools/ts-require.js and, for comparison, through ts-node as every run did before.
 * `loginsPerHost` counts the SSH logins each host's sshd accepted during the fleet's `preview --refresh`
 * runs, divided by the runs: one means every read on a host shared one login.
 * Prints one JSON object on stdout, progress on stderr; both stacks and the hosts are removed at the end,
 * also on error or Ctrl-C.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { execFileSync } from "node:child_process";
import { PulumiCommand, type Stack } from "@pulumi/pulumi/automation";
import { runInHost, simDown, simUp } from "../sim/hosts";
import { parseFlags, parseOrExit, positiveNumber, UsageError } from "../scripts/args";
import { hostPaths } from "../sim/hosts/paths";
import { E2E_TIME_SCALE, openStack, PROJECT_ROOT } from "../test/e2e/support/stack";
import { ensureFileBackend, FLOOR_DIR, openFloorStack, stateResourceCount } from "./scale/floor-stack";
import { median, runCli, type CliRun } from "./scale/cli-run";
import type { SimHost } from "../sim/hosts/host";
import type { EngineEntry } from "../test/e2e/support/stack";

const USAGE = "usage: npm run bench:cli [-- --rounds N] [--sizes EXH,EXH]";

function parseBenchArgs(argv: readonly string[]): { rounds: number; sizes: Array<{ engines: number; hosts: number }> } {
  const wants = { rounds: "a positive number of rounds", sizes: "<engines>x<hosts> pairs with engines a multiple of hosts, e.g. 4x2,16x4" };
  const values = parseFlags(argv, { rounds: { type: "string" }, sizes: { type: "string" } }, wants);
  const sizes = (values.sizes ?? "4x2,16x4").split(",").map((s) => {
    const [engines, hosts] = s.split("x").map(Number) as [number, number];
    if (!(engines > 0 && hosts > 0 && engines % hosts === 0)) throw new UsageError(`--sizes: "${s}" is not <engines>x<hosts> with engines a multiple of hosts`);
    return { engines, hosts };
  });
  return { rounds: positiveNumber("rounds", values.rounds, 3), sizes };
}

const { rounds: ROUNDS, sizes: SIZES } = parseOrExit(() => parseBenchArgs(process.argv.slice(2)), USAGE);
/** Hosts clear of every fleet the tests bring up (sim1-sim7, simdock) and of bench:scale's (sim21-24). */
const FIRST_HOST = 31;
const ROUTER_PORT = 8621;
const PROMETHEUS_PORT = 9691;
/** The floor's own state holds its Stack resource and the default dynamic provider beside its resources. */
const FLOOR_OVERHEAD = 2;
const HOST_STATE_DIR = "/var/lib/narwhal-fleet";
const PROGRAM_LOAD_RUNS = 5;

/** SSH logins a simulated host's sshd has accepted so far. */
const acceptedLogins = (alias: string): number => (fs.readFileSync(hostPaths(alias).sshdLog, "utf8").match(/^Accepted \S+ for /gm) ?? []).length;

const log = (msg: string) => process.stderr.write(`[bench:cli ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

function enginesOn(hosts: SimHost[], perHost: number): EngineEntry[] {
  return hosts.flatMap((h, hi) =>
    Array.from({ length: perHost }, (_, g) => {
      const i = hi * perHost + g;
      return { id: `e${i + 1}`, host: h.alias, gpuIds: [g], port: 8700 + i, attestationPort: 8800 + i, nixlPort: 5900 + i };
    }),
  );
}

/** Seconds to load the program's modules in a fresh Node process, as the language host does. */
function programLoadS(preload: string[]): number {
  const samples: number[] = [];
  for (let i = 0; i < PROGRAM_LOAD_RUNS; i++) {
    const out = execFileSync(process.execPath, [...preload, "-e", `const t=process.hrtime.bigint(); require("./components/fleet"); console.log(Number(process.hrtime.bigint()-t)/1e9)`], { cwd: PROJECT_ROOT, encoding: "utf8" });
    samples.push(Number(out.trim()));
  }
  return median(samples);
}

function withoutTranspileOnly(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.PULUMI_NODEJS_TRANSPILE_ONLY;
  return env;
}

type Op = "preview" | "up" | "previewRefresh";
const OP_ARGS: Record<Op, string[]> = {
  preview: ["preview", "--non-interactive", "--expect-no-changes"],
  up: ["up", "--yes", "--skip-preview", "--non-interactive", "--expect-no-changes"],
  previewRefresh: ["preview", "--refresh", "--non-interactive", "--expect-no-changes"],
};
const RUNNERS = ["fleet", "floor", "floorTranspileOnly"] as const;
type Runner = (typeof RUNNERS)[number];

async function measureSize(cli: PulumiCommand, engines: number, hostCount: number): Promise<Record<string, unknown>> {
  const perHost = engines / hostCount;
  const aliases = Array.from({ length: hostCount }, (_, i) => `sim${FIRST_HOST + i}`);
  const name = `bench-cli-${engines}`;
  const floorName = `${name}-floor`;
  let fleet: Stack | undefined;
  let floor: Stack | undefined;
  try {
    log(`sim up ${aliases.join(", ")} (h100:${perHost})`);
    const sim = await simUp({ hosts: FIRST_HOST + hostCount - 1, aliases, layouts: Object.fromEntries(aliases.map((a) => [a, `h100:${perHost}`])), timeScale: E2E_TIME_SCALE });
    fleet = await openStack(name, sim.hosts, enginesOn(sim.hosts, perHost), { router: { port: ROUTER_PORT }, observability: { prometheusPort: PROMETHEUS_PORT } });
    await fleet.destroy({ onOutput: () => undefined });
    log(`${name}: up from nothing`);
    await fleet.up({ onOutput: () => undefined });
    const resources = await stateResourceCount(fleet);
    floor = await openFloorStack(floorName, cli, resources - FLOOR_OVERHEAD);
    await floor.up({ onOutput: () => undefined });

    const where: Record<Runner, { cwd: string; stack: string; env: NodeJS.ProcessEnv }> = {
      fleet: { cwd: PROJECT_ROOT, stack: name, env: process.env },
      floor: { cwd: FLOOR_DIR, stack: floorName, env: withoutTranspileOnly() },
      floorTranspileOnly: { cwd: FLOOR_DIR, stack: floorName, env: { ...process.env, PULUMI_NODEJS_TRANSPILE_ONLY: "true" } },
    };
    const runs: Record<Op, Record<Runner, CliRun[]>> = {
      preview: { fleet: [], floor: [], floorTranspileOnly: [] },
      up: { fleet: [], floor: [], floorTranspileOnly: [] },
      previewRefresh: { fleet: [], floor: [], floorTranspileOnly: [] },
    };
    const refreshLogins = Object.fromEntries(aliases.map((a) => [a, 0]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const op of Object.keys(OP_ARGS) as Op[]) {
        for (const runner of RUNNERS) {
          const w = where[runner];
          const countLogins = runner === "fleet" && op === "previewRefresh";
          const before = countLogins ? aliases.map(acceptedLogins) : [];
          const r = await runCli([...OP_ARGS[op], "--stack", w.stack], w.cwd, w.env);
          if (countLogins) aliases.forEach((a, i) => (refreshLogins[a] += acceptedLogins(a) - before[i]));
          runs[op][runner].push(r);
          log(`${name} round ${round}: ${op} ${runner}: ${r.wallS} s wall, ${r.cpuS} s CPU`);
        }
      }
    }
    const figures = Object.fromEntries(
      (Object.keys(runs) as Op[]).map((op) => {
        const per = Object.fromEntries(RUNNERS.map((r) => [r, { wallS: median(runs[op][r].map((x) => x.wallS)), cpuS: median(runs[op][r].map((x) => x.cpuS)) }])) as Record<Runner, { wallS: number; cpuS: number }>;
        const ratio = (a: number, b: number) => Number((a / b).toFixed(2));
        return [
          op,
          {
            ...per,
            ratioToFloor: { wall: ratio(per.fleet.wallS, per.floor.wallS), cpu: ratio(per.fleet.cpuS, per.floor.cpuS) },
            ratioToFloorTranspileOnly: { wall: ratio(per.fleet.wallS, per.floorTranspileOnly.wallS), cpu: ratio(per.fleet.cpuS, per.floorTranspileOnly.cpuS) },
          },
        ];
      }),
    );
    const loginsPerHost = Object.fromEntries(aliases.map((a) => [a, refreshLogins[a] / ROUNDS]));
    return { engines, hosts: hostCount, resources, rounds: ROUNDS, ...figures, previewRefreshLoginsPerHost: loginsPerHost };
  } finally {
    for (const [stack, stackName, dir] of [[fleet, name, PROJECT_ROOT], [floor, floorName, FLOOR_DIR]] as const) {
      if (!stack) continue;
      await stack.destroy({ onOutput: () => undefined }).then(() => stack.workspace.removeStack(stackName)).catch((err: Error) => log(`cleanup of ${stackName} failed: ${err.message.split("\n")[0]}`));
      fs.rmSync(path.join(dir, `Pulumi.${stackName}.yaml`), { force: true });
    }
    await runInHost(aliases[0], ["rm", "-rf", "--", `${HOST_STATE_DIR}/${name}`]).catch(() => undefined);
    await simDown({ aliases }).catch((err: Error) => log(`sim down failed: ${err.message}`));
  }
}

async function main(): Promise<void> {
  ensureFileBackend();
  const cli = await PulumiCommand.get({ root: path.join(PROJECT_ROOT, ".tools"), skipVersionCheck: false });
  const programLoad = {
    compiledS: programLoadS(["-r", path.join(PROJECT_ROOT, "tools", "ts-require.js")]),
    tsNodeTranspileOnlyS: programLoadS(["-r", "ts-node/register/transpile-only"]),
  };
  log(`program load: ${JSON.stringify(programLoad)}`);
  const sizes = [];
  for (const { engines, hosts } of SIZES) sizes.push(await measureSize(cli, engines, hosts));
  process.stdout.write(JSON.stringify({ cli: cli.version?.toString() ?? null, programLoad, sizes }, null, 2) + "\n");
}

main().catch((err: Error) => {
  log(`failed: ${err.message}`);
  process.exitCode = 1;
});
