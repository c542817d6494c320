/**
 * What one CLI run costs this program against Pulumi's own floor, at three fleet sizes.
 *
 *   npm run bench:cli [-- --rounds 3] [--sizes 4x2,16x4,64x16] [--profile]
 *
 * Per size (engines x hosts, on hosts of the benchmark's own: sim50..), deploys stack `bench-cli-<n>` with
 * the e2e stack's config, timing its first `up` gate by gate, and the floor program (bench/floor) with as
 * many resources. Then, round after round and each one right after the other so both see the same
 * machine: no-change `preview`, `up` and `preview --refresh` of the fleet and of the floor. The floor runs
 * compiled to JavaScript (bench/scale/floor-compiled.ts), the cheapest program of that size Pulumi can
 * run: the ratios and targets are taken against it. It runs once more as Pulumi runs a TypeScript program
 * by default (ts-node, type-checked), for comparison. Last, each stack's `destroy`, once.
 *
 * Each figure is the median of the rounds: wall seconds, CPU seconds (the CLI and every process under it)
 * (`cpuByRoleS`: of them, the program's Node process, the dynamic-provider hosts, and the CLI with its
 * other plugins) and peak resident MiB of the program's Node process and of the largest provider host.
 * With `--profile`, one more no-change `preview` of the fleet and of the compiled floor runs with V8's
 * profiler in each of their Node processes (bench/scale/cpu-profile-hook.js), and `profile` says where
 * each process's CPU went: by owner (a package, a folder of this project, V8) and its top functions.
 * `programLoad` is the time to load the program's modules (node, warm cache) through tools/ts-require.js
 * and, for comparison, through ts-node. `loginsPerHost` counts the SSH logins each host's sshd accepted
 * during the fleet's `preview --refresh` runs, divided by the runs: one means every read on a host shared
 * one login. Prints one JSON object on stdout, progress on stderr; both stacks and the hosts are removed
 * at the end, also on error or Ctrl-C.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as os from "node:os";
import { execFileSync } from "node:child_process";
import { PulumiCommand, type Stack } from "@pulumi/pulumi/automation";
import { runInHost, simDown, simUp } from "../sim/hosts";
import { parseFlags, parseOrExit, positiveNumber, UsageError } from "../scripts/args";
import { hostPaths } from "../sim/hosts/paths";
import { E2E_TIME_SCALE, openStack, PROJECT_ROOT } from "../test/e2e/support/stack";
import { ensureFileBackend, FLOOR_DIR, openFloorStack, stateResourceCount } from "./scale/floor-stack";
import { median, runCli, type CliRun } from "./scale/cli-run";
import { compileFloor, shareStackConfig } from "./scale/floor-compiled";
import { gateTimes } from "./scale/gate-times";
import { PROGRAM_DEFAULTS } from "../lib/config/defaults";
import { cpuWhere } from "./scale/cpu-profile";
import { roleOf } from "./scale/process-tree";
import type { SimHost } from "../sim/hosts/host";
import type { EngineEntry } from "../test/e2e/support/stack";

const USAGE = "usage: npm run bench:cli [-- --rounds N] [--sizes EXH,EXH,...] [--profile]";

function parseBenchArgs(argv: readonly string[]): { rounds: number; sizes: Array<{ engines: number; hosts: number }>; profile: boolean } {
  const wants = { rounds: "a positive number of rounds", sizes: "<engines>x<hosts> pairs with engines a multiple of hosts, e.g. 4x2,16x4,64x16" };
  const values = parseFlags(argv, { rounds: { type: "string" }, sizes: { type: "string" }, profile: { type: "boolean" } }, wants);
  const sizes = (values.sizes ?? "4x2,16x4,64x16").split(",").map((s) => {
    const [engines, hosts] = s.split("x").map(Number) as [number, number];
    if (!(engines > 0 && hosts > 0 && engines % hosts === 0)) throw new UsageError(`--sizes: "${s}" is not <engines>x<hosts> with engines a multiple of hosts`);
    return { engines, hosts };
  });
  return { rounds: positiveNumber("rounds", values.rounds, 3), sizes, profile: values.profile === true };
}

const { rounds: ROUNDS, sizes: SIZES, profile: PROFILE } = parseOrExit(() => parseBenchArgs(process.argv.slice(2)), USAGE);
/** Hosts clear of every fleet the tests bring up (sim1-sim15, sim40-41, simdock) and of bench:scale's (sim21-24). */
const FIRST_HOST = 50;
const ROUTER_PORT = 8621;
const PROMETHEUS_PORT = 9691;
/** The floor's own state holds its Stack resource and the default dynamic provider beside its resources. */
const FLOOR_OVERHEAD = 2;
const HOST_STATE_DIR = "/var/lib/narwhal-fleet";
const PROGRAM_LOAD_RUNS = 5;
const PROFILE_HOOK = path.join(PROJECT_ROOT, "bench", "scale", "cpu-profile-hook.js");
/** Set by main: the folder the compiled floor runs in. */
let FLOOR_COMPILED = "";

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
/** The most each figure may cost against the compiled floor's CPU (issue targets; destroy is timed once). */
const CPU_TARGETS: Record<Op | "destroy", number> = { preview: 1.5, up: 1.5, previewRefresh: 2, destroy: 1.5 };
const RUNNERS = ["fleet", "floorCompiled", "floorTsNode"] as const;
type Runner = (typeof RUNNERS)[number];

const ratio = (a: number, b: number) => Number((a / b).toFixed(2));

/** Medians of one op's runs per runner, and the fleet's CPU ratio to the compiled floor against its target. */
function figuresOf(op: Op | "destroy", runs: Record<Runner, CliRun[]>) {
  const medians = (xs: CliRun[]) => {
    const peak = (role: keyof CliRun["peakRssMiB"]) => median(xs.map((x) => x.peakRssMiB[role]));
    const cpu = (role: keyof CliRun["cpuByRoleS"]) => median(xs.map((x) => x.cpuByRoleS[role]));
    return {
      wallS: median(xs.map((x) => x.wallS)),
      cpuS: median(xs.map((x) => x.cpuS)),
      cpuByRoleS: { program: cpu("program"), providerHost: cpu("providerHost"), cliAndPlugins: cpu("other") },
      peakRssMiB: { program: peak("program"), providerHost: peak("providerHost") },
    };
  };
  const per = { fleet: medians(runs.fleet), floorCompiled: medians(runs.floorCompiled), ...(runs.floorTsNode.length ? { floorTsNode: medians(runs.floorTsNode) } : {}) };
  const cpuRatio = ratio(per.fleet.cpuS, per.floorCompiled.cpuS);
  return {
    ...per,
    ratioToFloorCompiled: { wall: ratio(per.fleet.wallS, per.floorCompiled.wallS), cpu: cpuRatio },
    ...(per.floorTsNode ? { ratioToFloorTsNode: { wall: ratio(per.fleet.wallS, per.floorTsNode.wallS), cpu: ratio(per.fleet.cpuS, per.floorTsNode.cpuS) } } : {}),
    cpuTarget: CPU_TARGETS[op],
    met: cpuRatio <= CPU_TARGETS[op],
  };
}

async function measureSize(cli: PulumiCommand, engines: number, hostCount: number): Promise<Record<string, unknown>> {
  const perHost = engines / hostCount;
  const aliases = Array.from({ length: hostCount }, (_, i) => `sim${FIRST_HOST + i}`);
  const name = `bench-cli-${engines}`;
  const floorName = `${name}-floor`;
  let fleet: Stack | undefined;
  let floor: Stack | undefined;
  const destroyed: Record<Runner, CliRun[]> = { fleet: [], floorCompiled: [], floorTsNode: [] };
  try {
    log(`sim up ${aliases.join(", ")} (h100:${perHost})`);
    const sim = await simUp({ hosts: FIRST_HOST + hostCount - 1, aliases, layouts: Object.fromEntries(aliases.map((a) => [a, `h100:${perHost}`])), timeScale: E2E_TIME_SCALE });
    fleet = await openStack(name, sim.hosts, enginesOn(sim.hosts, perHost), { router: { port: ROUTER_PORT }, observability: { prometheusPort: PROMETHEUS_PORT } });
    await fleet.destroy({ onOutput: () => undefined });
    log(`${name}: up from nothing`);
    const firstUp = gateTimes();
    const upStarted = Date.now();
    await fleet.up({ onOutput: () => undefined, onEvent: firstUp.onEvent });
    const firstUpS = Number(((Date.now() - upStarted) / 1000).toFixed(1));
    log(`${name}: first up ${firstUpS} s: ${JSON.stringify(firstUp.times())}`);
    const resources = await stateResourceCount(fleet);
    floor = await openFloorStack(floorName, cli, resources - FLOOR_OVERHEAD);
    await floor.up({ onOutput: () => undefined });
    shareStackConfig(floorName);

    const where: Record<Runner, { cwd: string; stack: string }> = {
      fleet: { cwd: PROJECT_ROOT, stack: name },
      floorCompiled: { cwd: FLOOR_COMPILED, stack: floorName },
      floorTsNode: { cwd: FLOOR_DIR, stack: floorName },
    };
    const env = withoutTranspileOnly();
    const runs = Object.fromEntries((Object.keys(OP_ARGS) as Op[]).map((op) => [op, { fleet: [], floorCompiled: [], floorTsNode: [] }])) as unknown as Record<Op, Record<Runner, CliRun[]>>;
    const refreshLogins = Object.fromEntries(aliases.map((a) => [a, 0]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const op of Object.keys(OP_ARGS) as Op[]) {
        for (const runner of RUNNERS) {
          const w = where[runner];
          const countLogins = runner === "fleet" && op === "previewRefresh";
          const before = countLogins ? aliases.map(acceptedLogins) : [];
          const r = await runCli([...OP_ARGS[op], "--stack", w.stack], w.cwd, env);
          if (countLogins) aliases.forEach((a, i) => (refreshLogins[a] += acceptedLogins(a) - before[i]));
          runs[op][runner].push(r);
          log(`${name} round ${round}: ${op} ${runner}: ${r.wallS} s wall, ${r.cpuS} s CPU, ${JSON.stringify(r.peakRssMiB)} MiB`);
        }
      }
    }
    const profile = PROFILE ? await profiledPreviews({ fleet: where.fleet, floorCompiled: where.floorCompiled }, env) : undefined;
    // Destroy once each, the floor compiled: the states are gone after it.
    destroyed.fleet.push(await runCli(["destroy", "--yes", "--non-interactive", "--skip-preview", "--stack", name], PROJECT_ROOT, env));
    fleet = undefined;
    destroyed.floorCompiled.push(await runCli(["destroy", "--yes", "--non-interactive", "--skip-preview", "--stack", floorName], FLOOR_COMPILED, env));
    log(`${name}: destroy fleet ${JSON.stringify(destroyed.fleet[0])}, floor ${JSON.stringify(destroyed.floorCompiled[0])}`);
    const figures = Object.fromEntries((Object.keys(runs) as Op[]).map((op) => [op, figuresOf(op, runs[op])]));
    const loginsPerHost = Object.fromEntries(aliases.map((a) => [a, refreshLogins[a] / ROUNDS]));
    return {
      engines,
      hosts: hostCount,
      resources,
      rounds: ROUNDS,
      // The stack takes the default fabric settings (test/e2e/support/stack.ts): each edge runs its tool that long.
      firstUp: { wallS: firstUpS, gates: firstUp.times(), fabricEdges: firstUp.edges(PROGRAM_DEFAULTS.fabric.durationS) },
      ...figures,
      destroy: figuresOf("destroy", destroyed),
      previewRefreshLoginsPerHost: loginsPerHost,
      ...(profile ? { profile } : {}),
    };
  } finally {
    for (const [stack, stackName, dir] of [[fleet, name, PROJECT_ROOT], [floor, floorName, FLOOR_DIR]] as const) {
      if (stack) await stack.destroy({ onOutput: () => undefined }).catch((err: Error) => log(`cleanup of ${stackName} failed: ${err.message.split("\n")[0]}`));
      if (stack) await stack.workspace.removeStack(stackName).catch(() => undefined);
      fs.rmSync(path.join(dir, `Pulumi.${stackName}.yaml`), { force: true });
      fs.rmSync(path.join(FLOOR_COMPILED, `Pulumi.${stackName}.yaml`), { force: true });
    }
    await runInHost(aliases[0], ["rm", "-rf", "--", `${HOST_STATE_DIR}/${name}`]).catch(() => undefined);
    await simDown({ aliases }).catch((err: Error) => log(`sim down failed: ${err.message}`));
  }
}

/** One no-change `preview` of each, with V8's profiler in every Node process under it; where its CPU went. */
async function profiledPreviews(where: Record<"fleet" | "floorCompiled", { cwd: string; stack: string }>, env: NodeJS.ProcessEnv) {
  const out: Record<string, unknown> = {};
  for (const [runner, w] of Object.entries(where)) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-cpu-profile-"));
    try {
      const profiled = { ...env, NARWHAL_CPU_PROFILE_DIR: dir, NODE_OPTIONS: `${env.NODE_OPTIONS ?? ""} --require ${PROFILE_HOOK}`.trim() };
      const run = await runCli([...OP_ARGS.preview, "--stack", w.stack], w.cwd, profiled);
      const processes = fs
        .readdirSync(dir)
        .filter((f) => f.endsWith(".cpuprofile"))
        .map((f) => ({ process: roleOf(fs.readFileSync(path.join(dir, f.replace(/\.cpuprofile$/, ".argv")), "utf8")), ...cpuWhere(path.join(dir, f), w.cwd) }))
        .sort((a, b) => b.busyS - a.busyS);
      out[runner] = { run, processes };
      log(`profiled preview of ${runner}: ${JSON.stringify(processes.map((p) => [p.process, p.busyS]))}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  return out;
}

async function main(): Promise<void> {
  ensureFileBackend();
  const cli = await PulumiCommand.get({ root: path.join(PROJECT_ROOT, ".tools"), skipVersionCheck: false });
  FLOOR_COMPILED = compileFloor();
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
