/**
 * A first `up` on a busy machine: a five-engine fleet on three simulated hosts, deployed from nothing with
 * the default profiling settings (no extra fit tries) while CPU loops keep this machine's cores busy, as a
 * new user's laptop or a shared CI runner would be.
 *
 *   npm run bench:busy-first-up [-- --rounds 3 --loops 3]
 *
 * Each round starts from nothing and runs `pulumi up` until it converges, at most MAX_UPS times; it
 * records how many ups that took, the first line of each failure, the load average, and per engine how
 * many profile sweeps were recorded and how many samples they re-took (the machine's lateness or another
 * request: lib/profiling/resample.ts), from the evidence store. Prints one JSON object on stdout, progress on stderr. The stack is
 * destroyed and removed, the loops stopped and the hosts taken down at the end, also on error or Ctrl-C.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import type { Stack } from "@pulumi/pulumi/automation";
import { simDown, simUp } from "../sim/hosts";
import { parseFlags, parseOrExit } from "../scripts/args";
import { E2E_TIME_SCALE, openStack, PROJECT_ROOT, type EngineEntry } from "../test/e2e/support/stack";
import { failureReason } from "./scale/steps";
import { withDeadline } from "./scale/deadline";
import { EvidenceStore, evidenceRoot } from "../lib/evidence/store";

const STACK = "bench-busy";
const HOSTS = ["sim31", "sim32", "sim33"] as const;
const TOPOLOGY_SIZE = 33;
/** Ups one round may take before it counts as not converged. */
const MAX_UPS = 3;
// Bounded waits, named so a timeout says which phase ran out.
const UP_TIMEOUT_MS = 30 * 60_000;
const DESTROY_TIMEOUT_MS = 15 * 60_000;

const USAGE = "usage: npm run bench:busy-first-up [-- --rounds N --loops N]";
const flags = parseOrExit(() => parseFlags(process.argv.slice(2), { rounds: { type: "string" }, loops: { type: "string" } }, { rounds: "rounds from nothing (default 3)", loops: "CPU loops beside the up (default 3)" }), USAGE);
const ROUNDS = Number(flags.rounds ?? 3);
const LOOPS = Number(flags.loops ?? 3);

const log = (msg: string) => process.stderr.write(`[bench:busy-first-up ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

interface ProfileFigures {
  sweeps: number;
  retaken: number;
  shared: number;
}

/** Per engine, the profile sweeps recorded since `since` and the samples they re-took, from the evidence store. */
async function profileFigures(since: number): Promise<Record<string, ProfileFigures>> {
  const store = new EvidenceStore(evidenceRoot(PROJECT_ROOT, STACK));
  const out: Record<string, ProfileFigures> = {};
  for (const r of await store.list("profile")) {
    const rec = (await store.read(r.relativePath, r.digest)) as unknown as { subject: { alias: string }; startedAt: string; observations: { resampled?: { retaken: number; shared?: number } } };
    if (Date.parse(rec.startedAt) < since) continue;
    const f = (out[rec.subject.alias] ??= { sweeps: 0, retaken: 0, shared: 0 });
    f.sweeps++;
    f.retaken += rec.observations.resampled?.retaken ?? 0;
    f.shared += rec.observations.resampled?.shared ?? 0;
  }
  return out;
}

async function round(stack: Stack, n: number) {
  const t0 = performance.now();
  const since = Date.now();
  const failures: string[] = [];
  const load: number[] = [];
  for (let up = 1; up <= MAX_UPS; up++) {
    load.push(Number(os.loadavg()[0].toFixed(2)));
    const ok = await withDeadline(`round ${n} up ${up}`, stack, UP_TIMEOUT_MS, () =>
      stack.up({ onOutput: () => undefined }).then(
        () => true,
        (err: Error) => (failures.push(failureReason(err.message)), false),
      ),
    );
    log(`round ${n}: up ${up} ${ok ? "converged" : `failed: ${failures[failures.length - 1]}`}`);
    if (ok) return { ups: up, converged: true, failures, loadAverage: load, seconds: Math.round((performance.now() - t0) / 1000), profiles: await profileFigures(since) };
  }
  return { ups: MAX_UPS, converged: false, failures, loadAverage: load, seconds: Math.round((performance.now() - t0) / 1000), profiles: await profileFigures(since) };
}

async function main(): Promise<void> {
  const loops: ChildProcess[] = [];
  let stack: Stack | undefined;
  const cleanup = async () => {
    for (const l of loops) l.kill("SIGKILL");
    if (stack) await withDeadline("destroy", stack, DESTROY_TIMEOUT_MS, () => stack!.destroy({ onOutput: () => undefined })).catch((err: Error) => log(`destroy: ${err.message}`));
    if (stack) await stack.workspace.removeStack(STACK).catch(() => undefined);
    fs.rmSync(path.join(PROJECT_ROOT, `Pulumi.${STACK}.yaml`), { force: true });
    await simDown({ aliases: [...HOSTS] }).catch(() => undefined);
  };
  process.once("SIGINT", () => void cleanup().then(() => process.exit(130)));
  try {
    log(`bringing up ${HOSTS.join(", ")}`);
    const hosts = (await simUp({ hosts: TOPOLOGY_SIZE, aliases: [...HOSTS], layouts: { sim31: "h100:2", sim32: "h100:2", sim33: "h100:1" }, timeScale: E2E_TIME_SCALE })).hosts;
    const [a, b, c] = HOSTS.map((alias) => hosts.find((h) => h.alias === alias)!);
    const engines: EngineEntry[] = [
      { id: "b1", host: a.alias, gpuIds: [0], port: 8701, attestationPort: 8711, nixlPort: 5701 },
      { id: "b2", host: a.alias, gpuIds: [1], port: 8702, attestationPort: 8712, nixlPort: 5702 },
      { id: "b3", host: b.alias, gpuIds: [0], port: 8703, attestationPort: 8713, nixlPort: 5703 },
      { id: "b4", host: b.alias, gpuIds: [1], port: 8704, attestationPort: 8714, nixlPort: 5704 },
      { id: "b5", host: c.alias, gpuIds: [0], port: 8705, attestationPort: 8715, nixlPort: 5705 },
    ];
    // The defaults a new user has: no profiling.fitAttempts, the KV peer wave on.
    stack = await openStack(STACK, [a, b, c], engines, { router: { port: 8751 }, observability: { prometheusPort: 9751, freshnessPort: 9752 } });
    await stack.removeConfig("narwhal-fleet:runtime.restartKvPeers", true);
    for (let i = 0; i < LOOPS; i++) loops.push(spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" }));
    log(`${LOOPS} CPU loops running beside the up`);
    const rounds = [];
    for (let n = 1; n <= ROUNDS; n++) {
      await withDeadline("destroy", stack, DESTROY_TIMEOUT_MS, () => stack!.destroy({ onOutput: () => undefined }));
      rounds.push(await round(stack, n));
    }
    const out = {
      fleet: { engines: engines.length, hosts: HOSTS.length, timeScale: E2E_TIME_SCALE },
      cpus: os.cpus().length,
      loops: LOOPS,
      maxUps: MAX_UPS,
      rounds,
      convergedOnFirstUp: rounds.filter((r) => r.converged && r.ups === 1).length,
      converged: rounds.filter((r) => r.converged).length,
    };
    process.stdout.write(JSON.stringify(out, null, 2) + "\n");
  } finally {
    await cleanup();
  }
}

main().catch((err: Error) => {
  log(`failed: ${err.message.split("\n")[0]}`);
  process.exitCode = 1;
});
