/**
 * The fleet as a whole: `up` (idempotent, per host), `down` (everything, or some hosts), `status`,
 * and the host-level changes tests make (restart sshd with a new host key, restore a checkpoint).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import {
  BRIDGE,
  DEFAULT_TIME_SCALE,
  GATEWAY_ADDRESS,
  HOST_MODELS_ROOT,
  MODEL_NAME,
  NETNS_PREFIX,
  SIM_DIR,
  SUBNET_CIDR,
  TIME_SCALE_ENV,
} from "./constants";
import { liveAnchorPid } from "./anchor";
import { CheckpointOptions, writeCheckpoint, CheckpointFile } from "./checkpoint";
import { SimError } from "./exec";
import { checkHost, createHost, describeHost, destroyHost, isHealthy, SimHost } from "./host";
import { ensureHarnessKeys, ensurePassword, hashPassword, regenerateHostKey, writeClientFiles } from "./keys";
import { withFleetLock } from "./lock";
import { bridgeExists, ensureBridge, forwardRulePresent, listNetns, removeBridge } from "./network";
import { hostPaths, knownHostsFile, modelsMountPointMarker, privateKeyFile, sshConfigFile } from "./paths";
import { engineSimConfig, readSimConfig, writeSimConfig } from "./sim-config";
import { writeSimPythonSite } from "./python-site";
import { runInHost } from "./in-host";
import { writeVllmShim } from "./shims";
import { writeWheelhouse } from "./wheelhouse";
import { startSshd, stopSshd } from "./sshd";
import { fromStored, readState, sameStructure, toStored, writeState } from "./state";
import { buildTopology, HostSpec, Topology, TopologyOptions } from "../topology";

/**
 * An AMD host shows its render nodes in /sys/class/drm; one built before it did (its anchor mounted no
 * such tree) is rebuilt rather than kept.
 */
async function hasDrmTree(spec: HostSpec): Promise<boolean> {
  if (spec.layout.model?.vendor !== "amd") return true;
  return (await runInHost(spec.alias, ["test", "-e", "/sys/class/drm/version"], { allowFail: true })).code === 0;
}

export interface SimUpOptions extends TopologyOptions {
  /** Engine time scale for the hosts' sim configs; default $NARWHAL_SIM_TIME_SCALE, else 0.05. */
  timeScale?: number;
  /**
   * Bring up only these hosts of the topology; the topology's other hosts are not touched, so a test
   * can use sim6 without rebuilding a sim5 another test gave a different layout.
   */
  aliases?: string[];
}

/** What `up` did to each host. */
export type HostAction = "started" | "kept" | "kept, sim config updated" | "rebuilt";

export interface SimFleet {
  /** The hosts asked for, in index order. */
  hosts: SimHost[];
  actions: Record<string, HostAction>;
  bridge: string;
  gateway: string;
  subnet: string;
  privateKeyPath: string;
  knownHostsPath: string;
  sshConfigPath: string;
  /** Wall time of this `up`, in milliseconds. */
  elapsedMs: number;
}

function explicitTimeScale(opts: SimUpOptions): number | undefined {
  if (opts.timeScale !== undefined) return opts.timeScale;
  const env = process.env[TIME_SCALE_ENV];
  if (env === undefined || env === "") return undefined;
  const scale = Number(env);
  if (!Number.isFinite(scale) || scale <= 0) throw new Error(`${TIME_SCALE_ENV}=${env}: expected a positive number such as 0.05`);
  return scale;
}

/** Root-namespace prerequisites: sshd's privilege-separation dir and the /models mount point. */
function ensureMountPoints(): void {
  fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
  if (!fs.existsSync(HOST_MODELS_ROOT)) {
    fs.mkdirSync(HOST_MODELS_ROOT, { mode: 0o755 });
    fs.writeFileSync(modelsMountPointMarker(), `${HOST_MODELS_ROOT}\n`);
  }
}

/**
 * Brings the hosts of the topology up. A host that is already up with the same address, layout and
 * password setting is left as is (its sim config is rewritten only if the time scale was given
 * explicitly or its latency changed); a host that is broken or built differently is rebuilt. Hosts
 * outside the topology are not touched.
 */
export async function simUp(opts: SimUpOptions = {}): Promise<SimFleet> {
  const t0 = Date.now();
  const topology = only(buildTopology(opts), opts.aliases);
  const scale = explicitTimeScale(opts);
  return withFleetLock("up", async () => {
    fs.mkdirSync(SIM_DIR, { recursive: true });
    await ensureHarnessKeys();
    const passwordHash = await hashPassword(ensurePassword());
    ensureMountPoints();
    await ensureBridge();

    const state = readState();
    const actions: Record<string, HostAction> = {};
    const results = await Promise.allSettled(
      topology.hosts.map(async (spec) => {
        const stored = state.hosts[spec.alias];
        const check = await checkHost(spec.alias, spec.address, spec.dockerEngine);
        if (stored && isHealthy(check) && sameStructure(stored, spec) && (await hasDrmTree(spec))) {
          const p = hostPaths(spec.alias);
          const current = fs.existsSync(p.simConfig) ? readSimConfig(p.simConfig).timeScale : undefined;
          const changed = writeSimConfig(p.simConfig, engineSimConfig(spec, scale ?? current ?? DEFAULT_TIME_SCALE));
          // Hosts built before the Python side of their vLLM existed get it here (idempotent).
          writeSimPythonSite(p, spec.nixl);
          // Hosts built while the fleet pre-provisioned narwhal-attest lose it: Gate B installs it on engine hosts.
          fs.rmSync(path.join(p.binDir, "narwhal-attest"), { force: true });
          writeVllmShim(p.binDir, spec, p.simConfig);
          writeWheelhouse(p);
          actions[spec.alias] = changed ? "kept, sim config updated" : "kept";
          state.hosts[spec.alias] = { ...toStored(spec, stored.startedAt) };
          return;
        }
        const leftovers = check.netns || check.anchorPid !== undefined || check.sshdPid !== undefined || check.dockerdPid !== undefined;
        if (leftovers) await destroyHost(spec.alias);
        await createHost(spec, passwordHash, scale ?? DEFAULT_TIME_SCALE);
        actions[spec.alias] = leftovers || stored ? "rebuilt" : "started";
        state.hosts[spec.alias] = toStored(spec, new Date().toISOString());
      }),
    );
    // Record the hosts that did come up even when another failed, so status and down see them.
    writeState(state);
    writeClientFiles(Object.values(state.hosts).map((h) => describeHost(fromStored(h))));
    const failures = results.flatMap((r) => (r.status === "rejected" ? [(r.reason as Error).message] : []));
    if (failures.length > 0) throw new SimError("SIM_UP_FAILED", `sim up: ${failures.join("; ")}`);
    return fleetOf(topology.hosts, actions, Date.now() - t0);
  });
}

function only(topology: Topology, aliases: string[] | undefined): Topology {
  if (aliases === undefined) return topology;
  const unknown = aliases.filter((a) => !topology.hosts.some((h) => h.alias === a));
  if (unknown.length > 0) {
    throw new Error(`sim up: ${unknown.join(", ")} not in the topology (sim1..sim${topology.hosts.length}); raise hosts`);
  }
  return { hosts: topology.hosts.filter((h) => aliases.includes(h.alias)) };
}

function fleetOf(specs: readonly HostSpec[], actions: Record<string, HostAction>, elapsedMs: number): SimFleet {
  return {
    hosts: specs.map(describeHost),
    actions,
    bridge: BRIDGE,
    gateway: GATEWAY_ADDRESS,
    subnet: SUBNET_CIDR,
    privateKeyPath: privateKeyFile(),
    knownHostsPath: knownHostsFile(),
    sshConfigPath: sshConfigFile(),
    elapsedMs,
  };
}

/** The hosts `up` recorded, without checking or changing anything. */
export function simFleet(): SimHost[] {
  return Object.values(readState().hosts)
    .sort((a, b) => a.index - b.index)
    .map((h) => describeHost(fromStored(h)));
}

export interface SimDownOptions {
  /** Remove only these hosts and keep the bridge; default: everything. */
  aliases?: string[];
}

export interface SimDownResult {
  removedHosts: string[];
  killedProcesses: number;
  bridgeRemoved: boolean;
  elapsedMs: number;
}

/**
 * Removes hosts: every process in their network namespaces, the namespaces and veths. Without
 * `aliases` also every other `nw-*` namespace, the bridge, the FORWARD rule and the /models mount point
 * the harness made. Keys, host keys and the password stay in .sim/ so the next `up` looks the same.
 */
export async function simDown(opts: SimDownOptions = {}): Promise<SimDownResult> {
  const t0 = Date.now();
  return withFleetLock("down", async () => {
    const state = readState();
    const all = opts.aliases === undefined;
    const aliases = all
      ? [...new Set([...Object.keys(state.hosts), ...(await listNetns()).map((ns) => ns.slice(NETNS_PREFIX.length))])]
      : opts.aliases!;
    const killed = await Promise.all(aliases.map((alias) => destroyHost(alias)));
    for (const alias of aliases) delete state.hosts[alias];
    writeState(state);
    writeClientFiles(Object.values(state.hosts).map((h) => describeHost(fromStored(h))));
    if (all) {
      await removeBridge();
      if (fs.existsSync(modelsMountPointMarker())) {
        try {
          fs.rmdirSync(HOST_MODELS_ROOT);
        } catch {
          // someone put files there: leave it
        }
        fs.rmSync(modelsMountPointMarker(), { force: true });
      }
    }
    return { removedHosts: aliases.sort(), killedProcesses: killed.reduce((a, b) => a + b, 0), bridgeRemoved: all, elapsedMs: Date.now() - t0 };
  });
}

export interface HostStatus extends SimHost {
  netnsExists: boolean;
  anchorPid: number | null;
  sshdPid: number | null;
  /** Docker hosts: their dockerd, when alive (null elsewhere). */
  dockerdPid: number | null;
  /** sshd's identification line when it answered, else null. */
  sshBanner: string | null;
  up: boolean;
}

export interface SimStatus {
  bridge: { name: string; exists: boolean; forwardRule: boolean };
  hosts: HostStatus[];
  /** `nw-*` namespaces that no recorded host owns (removed by `down`). */
  strayNetns: string[];
}

export async function simStatus(): Promise<SimStatus> {
  const state = readState();
  const specs = Object.values(state.hosts)
    .sort((a, b) => a.index - b.index)
    .map(fromStored);
  const hosts = await Promise.all(
    specs.map(async (spec): Promise<HostStatus> => {
      const c = await checkHost(spec.alias, spec.address, spec.dockerEngine);
      return {
        ...describeHost(spec),
        netnsExists: c.netns,
        anchorPid: c.anchorPid ?? null,
        sshdPid: c.sshdPid ?? null,
        dockerdPid: c.dockerdPid ?? null,
        sshBanner: c.banner ?? null,
        up: isHealthy(c),
      };
    }),
  );
  const known = new Set(hosts.map((h) => h.netns));
  return {
    bridge: { name: BRIDGE, exists: await bridgeExists(), forwardRule: await forwardRulePresent() },
    hosts,
    strayNetns: (await listNetns()).filter((ns) => !known.has(ns)),
  };
}

function recordedSpec(alias: string): HostSpec {
  const stored = readState().hosts[alias];
  if (!stored) throw new SimError("SIM_HOST_UNKNOWN", `host ${alias} is not part of the running fleet; run \`npm run sim -- up\``);
  return fromStored(stored);
}

/** A host key as its two OpenSSH files hold it. */
export interface HostKeyPair {
  privateKey: string;
  publicKey: string;
}

type KeyChange = { kind: "same" } | { kind: "new" } | { kind: "install"; pair: HostKeyPair };

async function restart(alias: string, change: KeyChange): Promise<SimHost> {
  return withFleetLock(`restart sshd on ${alias}`, async () => {
    const spec = recordedSpec(alias);
    const p = hostPaths(alias);
    const anchor = liveAnchorPid(alias, p);
    if (!anchor) throw new SimError("SIM_HOST_DOWN", `host ${alias} is not up (no live namespace anchor); run \`npm run sim -- up\``);
    await stopSshd(p);
    if (change.kind === "new") await regenerateHostKey(p.hostKey, alias);
    if (change.kind === "install") {
      fs.writeFileSync(p.hostKey, change.pair.privateKey, { mode: 0o600 });
      fs.writeFileSync(p.hostKeyPub, change.pair.publicKey);
    }
    await startSshd(spec, p, anchor);
    writeClientFiles(simFleet());
    return describeHost(spec);
  });
}

/**
 * Gives the host a new host key and restarts its sshd (open sessions and engines keep running). The
 * harness's known_hosts follows; anything that pinned the old key now sees a mismatch. Save the old
 * key first with readHostKeyPair to put it back later with restartSshdWithHostKey.
 */
export function restartSshdWithNewHostKey(alias: string): Promise<SimHost> {
  return restart(alias, { kind: "new" });
}

/** Restarts the host's sshd with the given key (e.g. one saved by readHostKeyPair). */
export function restartSshdWithHostKey(alias: string, pair: HostKeyPair): Promise<SimHost> {
  return restart(alias, { kind: "install", pair });
}

/** Restarts the host's sshd with the same key. */
export function restartSshd(alias: string): Promise<SimHost> {
  return restart(alias, { kind: "same" });
}

export function readHostKeyPair(alias: string): HostKeyPair {
  const p = hostPaths(alias);
  return { privateKey: fs.readFileSync(p.hostKey, "utf8"), publicKey: fs.readFileSync(p.hostKeyPub, "utf8") };
}

/** Rewrites a host's checkpoint (default: the standard one, undoing a test's edits). */
export function writeHostCheckpoint(alias: string, opts: CheckpointOptions = {}): CheckpointFile[] {
  recordedSpec(alias);
  return writeCheckpoint(path.join(hostPaths(alias).modelsDir, MODEL_NAME), opts);
}
