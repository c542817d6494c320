/**
 * Scale: a 16-engine fleet on 4 simulated hosts, deployed and previewed with the real CLI, against the
 * floor of a stack with as many resources whose provider does nothing.
 *
 *   npm run bench:scale [-- --restart-kv-peers]
 *
 * Brings up sim21-sim24 (4 NVIDIA GPUs each, engines at the e2e time scale), opens stack `bench-scale`
 * with the e2e stack's config (reduced profiling sweep) and one engine per GPU, then times:
 * a full `up` from nothing; a no-change `preview --refresh`; after one engine is restarted by hand, the
 * `preview --refresh` and the `up --refresh`, with the resources that up re-measured (created or
 * replaced). Then the floor program (bench/floor) with the fleet stack's resource count, and its
 * no-change `preview --refresh`. With `--restart-kv-peers` the fleet sets `runtime.restartKvPeers`, so the
 * up after the restart restarts the rest of the KV component and converges; without it, that up stops at
 * the preflight, the peers crashing at their first handshake with the new process once their UCX endpoints
 * to the old one have timed out (vLLM #49238, NIXL 0.7.1), as the runbook's rule foresees. Prints one JSON object on stdout, progress on stderr. Both stacks are
 * destroyed and removed and the four hosts taken down at the end, also on error or Ctrl-C.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import { PulumiCommand, type Stack } from "@pulumi/pulumi/automation";
import { runInHost, simDown, simUp } from "../sim/hosts";
import { parseFlags, parseOrExit } from "../scripts/args";
import { E2E_TIME_SCALE, openStack, PROJECT_ROOT } from "../test/e2e/support/stack";
import { awaitHealthy, restartByHand } from "../test/e2e/support/restart";
import { PROMETHEUS_PORT, ROUTER_PORT, SCALE_HOSTS, SCALE_LAYOUT, SCALE_TOPOLOGY_SIZE, scaleEngines } from "./scale/fleet-config";
import { ensureFileBackend, openFloorStack, stateResourceCount } from "./scale/floor-stack";
import { failureReason, tallySteps, type StepTally } from "./scale/steps";
import { withDeadline } from "./scale/deadline";

const FLEET_STACK = "bench-scale";
const FLOOR_STACK = "bench-scale-floor";
/** The floor's own state holds its Stack resource and the default dynamic provider beside the resources it makes. */
const FLOOR_OVERHEAD = 2;
/** The config's default `hosts[].stateDir`, where each stack keeps its folder on a host. */
const HOST_STATE_DIR = "/var/lib/narwhal-fleet";
/** Engine restarted by hand: a decode engine on the last host, away from the router. */
const RESTARTED = "e16";
const USAGE = "usage: npm run bench:scale [-- --restart-kv-peers]";
const RESTART_KV_PEERS = parseOrExit(() => parseFlags(process.argv.slice(2), { "restart-kv-peers": { type: "boolean" } }, {}), USAGE)["restart-kv-peers"] ?? false;

// Bounded waits, named so a timeout says which phase ran out.
const UP_TIMEOUT_MS = 60 * 60_000;
const PREVIEW_TIMEOUT_MS = 15 * 60_000;
const DESTROY_TIMEOUT_MS = 20 * 60_000;
const RESTART_HEALTH_TIMEOUT_MS = 60_000;

const log = (msg: string) => process.stderr.write(`[bench:scale ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const seconds = (ms: number) => Number((ms / 1000).toFixed(1));

/** Runs one stack operation against a named deadline (./scale/deadline.ts), logging its time. */
async function timed<T>(phase: string, stack: Stack, limitMs: number, op: () => Promise<T>): Promise<{ value: T; s: number }> {
  const t0 = performance.now();
  const value = await withDeadline(phase, stack, limitMs, op);
  log(`${phase}: ${seconds(performance.now() - t0)} s`);
  return { value, s: seconds(performance.now() - t0) };
}

/** An up that may fail by design (the preflight after a lone restart): its time and first error line count. */
async function upOutcome(stack: Stack, phase: string): Promise<{ s: number; ok: boolean; error?: string; steps: StepTally }> {
  const steps = tallySteps();
  let error: string | undefined;
  const { s } = await timed(phase, stack, UP_TIMEOUT_MS, () =>
    stack.up({ refresh: true, onOutput: () => undefined, onEvent: steps.onEvent }).catch((err: Error) => {
      error = failureReason(err.message);
    }),
  );
  return { s, ok: error === undefined, ...(error ? { error } : {}), steps: steps.tally() };
}

async function previewNoChange(stack: Stack, phase: string): Promise<{ s: number; steps: StepTally }> {
  const steps = tallySteps();
  const { s } = await timed(phase, stack, PREVIEW_TIMEOUT_MS, () => stack.preview({ refresh: true, onEvent: steps.onEvent }));
  return { s, steps: steps.tally() };
}

async function removeStack(stack: Stack | undefined, name: string, stackFile: string): Promise<void> {
  if (!stack) return;
  try {
    await timed(`destroy ${name}`, stack, DESTROY_TIMEOUT_MS, () => stack.destroy({ onOutput: () => undefined }));
    await stack.workspace.removeStack(name);
  } catch (err) {
    log(`cleanup of ${name} failed (state kept in the backend): ${(err as Error).message.split("\n")[0]}`);
  }
  fs.rmSync(stackFile, { force: true });
}

async function main(): Promise<void> {
  ensureFileBackend();
  const cli = await PulumiCommand.get({ root: path.join(PROJECT_ROOT, ".tools"), skipVersionCheck: false });
  let fleet: Stack | undefined;
  let floor: Stack | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      log("cleanup: destroying both stacks, taking down " + SCALE_HOSTS.join(", "));
      await removeStack(fleet, FLEET_STACK, path.join(PROJECT_ROOT, `Pulumi.${FLEET_STACK}.yaml`));
      await removeStack(floor, FLOOR_STACK, path.join(__dirname, "floor", `Pulumi.${FLOOR_STACK}.yaml`));
      // The stack's folder lives in the hosts' shared /var; destroy stops what ran there but keeps the folder.
      try {
        await runInHost(SCALE_HOSTS[0], ["rm", "-rf", "--", `${HOST_STATE_DIR}/${FLEET_STACK}`]);
      } catch {
        // the host never came up: nothing of the stack is there
      }
      await simDown({ aliases: [...SCALE_HOSTS] }).catch((err: Error) => log(`sim down failed: ${err.message}`));
    })());
  process.once("SIGINT", () => void cleanup().finally(() => (process.exitCode = 130)));

  try {
    log(`sim up ${SCALE_HOSTS.join(", ")} (${SCALE_LAYOUT}, time scale ${E2E_TIME_SCALE})`);
    const sim = await simUp({
      hosts: SCALE_TOPOLOGY_SIZE,
      aliases: [...SCALE_HOSTS],
      layouts: Object.fromEntries(SCALE_HOSTS.map((a) => [a, SCALE_LAYOUT])),
      timeScale: E2E_TIME_SCALE,
    });
    const engines = scaleEngines(sim.hosts);
    fleet = await openStack(FLEET_STACK, sim.hosts, engines, {
      router: { port: ROUTER_PORT },
      observability: { prometheusPort: PROMETHEUS_PORT },
      runtime: { kind: "native", restartKvPeers: RESTART_KV_PEERS },
    });
    // From nothing: a stack left by an interrupted run may describe engines of hosts since rebuilt.
    await fleet.destroy({ onOutput: () => undefined });

    log(`full up: ${engines.length} engines on ${sim.hosts.length} hosts`);
    const fullUp = await timed("full up", fleet, UP_TIMEOUT_MS, () => fleet!.up({ onOutput: () => undefined }));
    const resources = await stateResourceCount(fleet);
    const noChange = await previewNoChange(fleet, "no-change preview --refresh");

    const out = (await fleet.outputs()).engines.value as Record<string, { host: string; url: string }>;
    const target = out[RESTARTED];
    log(`restarting ${RESTARTED} on ${target.host} by hand`);
    await restartByHand(FLEET_STACK, RESTARTED, target.host);
    await awaitHealthy(target.url, RESTART_HEALTH_TIMEOUT_MS);
    const restartPreview = await previewNoChange(fleet, `preview --refresh after ${RESTARTED} restarted`);
    const restartUp = await upOutcome(fleet, `up --refresh after ${RESTARTED} restarted`);

    floor = await openFloorStack(FLOOR_STACK, cli, resources - FLOOR_OVERHEAD);
    await floor.destroy({ onOutput: () => undefined });
    await timed("floor up", floor, UP_TIMEOUT_MS, () => floor!.up({ onOutput: () => undefined }));
    const floorResources = await stateResourceCount(floor);
    const floorPreview = await previewNoChange(floor, "floor no-change preview --refresh");

    const result = {
      cli: cli.version?.toString() ?? null,
      engines: engines.length,
      hosts: sim.hosts.length,
      resources,
      timeScale: E2E_TIME_SCALE,
      upS: fullUp.s,
      previewNoChangeS: noChange.s,
      previewNoChangePlanned: noChange.steps.planned,
      previewMode: "refresh",
      restart: {
        engine: RESTARTED,
        restartKvPeers: RESTART_KV_PEERS,
        previewS: restartPreview.s,
        previewPlanned: restartPreview.steps.planned,
        upS: restartUp.s,
        upOk: restartUp.ok,
        ...(restartUp.error ? { upError: restartUp.error } : {}),
        remeasured: restartUp.steps.remeasured.length,
        names: restartUp.steps.remeasured,
        updated: restartUp.steps.updated,
        failed: restartUp.steps.failed,
      },
      floor: { resources: floorResources, previewNoChangeS: floorPreview.s, previewNoChangePlanned: floorPreview.steps.planned.length },
    };
    process.stdout.write(JSON.stringify(result, null, 2) + "\n");
  } finally {
    await cleanup();
  }
}

main().catch((err: Error) => {
  log(`failed: ${err.stack ?? err.message}`);
  process.exitCode = 1;
});
