import * as fs from "node:fs";
import * as path from "node:path";
import { LocalWorkspace, PulumiCommand, Stack } from "@pulumi/pulumi/automation";
import { simUp } from "../../../sim/hosts";
import type { SimHost } from "../../../sim/hosts/host";

export const PROJECT_ROOT = path.resolve(__dirname, "..", "..", "..");
export const MODEL = "tiny-llama";
export const API_KEY = "e2e-engine-key-not-a-real-secret";
/**
 * Profiles and the preflight's decode-fit limits need decode intervals of milliseconds, not the
 * harness default's tenths of one: every e2e host (and the container image) runs engines at half speed.
 */
export const E2E_TIME_SCALE = 0.5;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A sweep within 4096 tokens (the contract's minimum counts of levels, repeats and the engine's
 * max_num_seqs) profiles an engine in seconds instead of minutes; the fits still need every point. Engines
 * are profiled side by side (the default): on two cores their fits stay within a fifth of Narwhal's limits.
 * The prefill sweep reaches 4096 because the pace gate times a 4096-token prompt against the fit: three
 * lengths up to 2048 fit the quadratic exactly, so one disturbed median swung the extrapolation to 4096
 * by a third and a healthy engine's pace sat on the 1.5x line (passing our preflight, failing
 * narwhal-check a minute later).
 */
export const PROFILING = { prefillRepeats: 3, prefillLens: [256, 1024, 2048, 4096], decodeInputLens: [512, 1024, 2048], decodeConcurrency: [1, 4], fitAttempts: 5 };

export interface EngineEntry {
  id: string;
  host: string;
  gpuIds?: number[];
  port: number;
  attestationPort: number;
  nixlPort: number;
  role?: "prefill" | "decode";
  /** Keep the engine in its role (the controller never moves it). */
  pin?: boolean;
  /** A runbook launch directory on the host whose running engine may be adopted. */
  runbookRun?: string;
}

/** The `hosts` config entries for simulated hosts, each with `extra` fields. */
export function hostEntries(hosts: SimHost[], extra: Record<string, unknown> = {}): Array<Record<string, unknown>> {
  return hosts.map((h) => ({ alias: h.alias, destination: `${h.user}@${h.address}`, fabricInterface: h.fabricInterface, ...extra }));
}

/**
 * A stack of this project, driven by the real CLI through the Automation API. `env` is added to every
 * CLI command's environment (another state backend and its credentials).
 */
export async function openStack(name: string, hosts: SimHost[], engines: EngineEntry[], extra: Record<string, unknown> = {}, env: Record<string, string> = {}): Promise<Stack> {
  const cli = await PulumiCommand.get({ root: path.join(PROJECT_ROOT, ".tools"), skipVersionCheck: false });
  const config: Record<string, unknown> = {
    "narwhal-fleet:sshPrivateKeyFile": path.relative(PROJECT_ROOT, hosts[0].privateKeyPath),
    "narwhal-fleet:hosts": hostEntries(hosts),
    "narwhal-fleet:engines": engines,
    "narwhal-fleet:model": { servedName: MODEL, checkpointDir: hosts[0].modelDir },
    // The invalidation rows state what one engine's restart re-measures, without its KV component's wave;
    // the files about faults and waves take the default (restartKvPeers on).
    "narwhal-fleet:runtime": { kind: "native", restartKvPeers: false },
    // Two cores run the CLI, the engines and every simulated sshd at once: allow slow handshakes.
    "narwhal-fleet:ssh": { connectTimeoutS: 30 },
    // As the dev stack: Gate B installs from the hosts' wheelhouse, Prometheus runs from Debian's package.
    "narwhal-fleet:router": { port: 8321, narwhal: { wheelhouse: "/srv/narwhal-wheels" } },
    "narwhal-fleet:observability": { runtime: "native", prometheusPort: 9391, freshnessPort: 9392 },
    "narwhal-fleet:profiling": PROFILING,
  };
  // A test's section adds to the defaults above (a router on another host keeps the wheelhouse).
  for (const [k, v] of Object.entries(extra)) {
    const key = `narwhal-fleet:${k}`;
    const base = config[key];
    config[key] = isObject(base) && isObject(v) ? { ...base, ...v } : v;
  }
  // JSON is YAML: the stack file is written whole, then the CLI adds the salt and the secret.
  fs.writeFileSync(path.join(PROJECT_ROOT, `Pulumi.${name}.yaml`), JSON.stringify({ config }, null, 2));
  const stack = await LocalWorkspace.createOrSelectStack({ stackName: name, workDir: PROJECT_ROOT }, { pulumiCommand: cli, envVars: env });
  await stack.setConfig("narwhal-fleet:engineApiKey", { value: API_KEY, secret: true });
  return stack;
}

/**
 * Sets a list or map in the project's namespace as the stack file's own structure, as `pulumi config set
 * --path` and the stack file written by hand hold it: a `setConfig` of JSON text would store a string,
 * into which no later `--path` set (the host-key pin a refusal prints) can reach.
 */
export async function setObjectConfig(stack: Stack, key: string, value: unknown): Promise<void> {
  await stack.setAllConfigJson(JSON.stringify({ [`narwhal-fleet:${key}`]: { value: JSON.stringify(value), objectValue: value, secret: false } }));
}

/** A list or map the stack's config holds, whether set as a structure or as JSON text. */
export async function getObjectConfig<T>(stack: Stack, key: string): Promise<T> {
  return JSON.parse((await stack.getConfig(`narwhal-fleet:${key}`)).value) as T;
}

/**
 * The outputs a stack shows in plaintext. The Automation API decrypts secret outputs (such as
 * `engineApiKey`) when it reads them; those are checked to be secret instead.
 */
export async function plainOutputs(stack: Stack): Promise<Record<string, unknown>> {
  return Object.fromEntries(Object.entries(await stack.outputs()).filter(([, o]) => !o.secret).map(([k, o]) => [k, o.value]));
}

let shared: Promise<{ stack: Stack; hosts: SimHost[]; engines: EngineEntry[] }> | undefined;

/**
 * One converged fleet shared by every e2e test file: 3 simulated NVIDIA hosts, 4 engines (two
 * colocated on the first host with disjoint GPUs). Ports differ from the dev stack's so the demo can run beside it.
 */
export function sharedFleet(): Promise<{ stack: Stack; hosts: SimHost[]; engines: EngineEntry[] }> {
  shared ??= (async () => {
    // Replicas must share one accelerator product: the NVIDIA hosts sim1, sim2 and sim4 (sim3 is AMD).
    const all = (await simUp({ hosts: 4, timeScale: E2E_TIME_SCALE })).hosts;
    const [a, b, c] = ["sim1", "sim2", "sim4"].map((alias) => all.find((h) => h.alias === alias)!) as [SimHost, SimHost, SimHost];
    const hosts = [a, b, c];
    const engines: EngineEntry[] = [
      { id: "e1", host: a.alias, gpuIds: [0], port: 8301, attestationPort: 8311, nixlPort: 5701 },
      { id: "e2", host: b.alias, gpuIds: [0], port: 8302, attestationPort: 8312, nixlPort: 5702 },
      { id: "e3", host: c.alias, gpuIds: [0], port: 8303, attestationPort: 8313, nixlPort: 5703 },
      { id: "e4", host: a.alias, gpuIds: [1], port: 8304, attestationPort: 8314, nixlPort: 5704 },
    ];
    const stack = await openStack("e2e", hosts, engines);
    // Start from nothing: a stack left by an earlier run may describe engines the harness has since
    // stopped, and the e2e layer proves convergence from scratch.
    await stack.destroy({ onOutput: () => undefined });
    await stack.up({ onOutput: () => undefined });
    return { stack, hosts, engines };
  })();
  return shared;
}
