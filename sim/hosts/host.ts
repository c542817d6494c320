/**
 * One simulated host: build it (files, network, anchor, sshd), check it, describe it, remove it.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { FABRIC_INTERFACE, HOST_MODEL_DIR, MODEL_NAME, PASSWORD_USER, PROCESS_EXIT_TIMEOUT_MS, SSH_PORT, SSH_USER } from "./constants";
import { liveAnchorPid, startAnchor } from "./anchor";
import { writeCheckpoint } from "./checkpoint";
import { liveDockerdPid, removeDockerCgroups, startDockerd, stopDockerd, writeDockerFiles } from "./docker";
import { writeEtc } from "./etc";
import { writeSimPythonSite } from "./python-site";
import { writeWheelhouse } from "./wheelhouse";
import { pidAlive, waitFor } from "./exec";
import { gpusOf, SimGpu, writeDrmTree, writePciTree } from "./inventory";
import { ensureHostKey, fingerprintOf, readPublicKeyLine } from "./keys";
import { createHostNetwork, deleteHostNetwork, netnsExists, netnsName, netnsPids } from "./network";
import { hostPaths, HostPaths, knownHostsFile, passwordFile, privateKeyFile, sshConfigFile } from "./paths";
import { engineSimConfig, writeSimConfig } from "./sim-config";
import { writeRdmaFiles } from "./rdma";
import { writeShims } from "./shims";
import { liveSshdPid, sshBanner, startSshd, writeSshdConfig } from "./sshd";
import type { GpuVendor, HostSpec } from "../topology";

/** A running simulated host, as tests and the program's e2e layer use it. */
export interface SimHost {
  alias: string;
  index: number;
  /** Fabric address on nwbr0, also the SSH address. */
  address: string;
  sshPort: number;
  user: string;
  privateKeyPath: string;
  knownHostsPath: string;
  /** `ssh -F <sshConfigPath> <alias>` logs in as root with the harness key and pinned host key. */
  sshConfigPath: string;
  /** The host's public key line, "ssh-ed25519 AAAA..." (no comment). */
  hostKey: string;
  /** "SHA256:..." as OpenSSH prints it. */
  fingerprint: string;
  /** Layout name: "h100:2", "mi300x:2" or "none". */
  layout: string;
  vendor: GpuVendor | null;
  gpus: SimGpu[];
  /** Checkpoint path inside the host. */
  modelDir: string;
  /** The same checkpoint as seen from the machine (edit it to make one replica differ). */
  modelDirOnMachine: string;
  /** Engine simulator config (NARWHAL_SIM_CONFIG of the host's vllm shim). */
  simConfigPath: string;
  netns: string;
  fabricInterface: string;
  /** Password logins (user `narwhal`) are accepted only when true; the password is in `passwordFile`. */
  passwordAuth: boolean;
  passwordUser: string;
  passwordFile: string;
  /** The host's state folder under .sim/hosts/. */
  dir: string;
  /** A docker host: runs its own Docker Engine (sim/hosts/docker.ts); its docker CLI talks to that. */
  dockerEngine: boolean;
  /** Its RDMA HCA (topology `rdma`), e.g. ["mlx5_0"]: port 1 is RoCE on the fabric interface; empty without one. */
  hcas: string[];
}

export function describeHost(spec: HostSpec): SimHost {
  const p = hostPaths(spec.alias);
  const hostKey = readPublicKeyLine(p.hostKeyPub);
  return {
    alias: spec.alias,
    index: spec.index,
    address: spec.address,
    sshPort: SSH_PORT,
    user: SSH_USER,
    privateKeyPath: privateKeyFile(),
    knownHostsPath: knownHostsFile(),
    sshConfigPath: sshConfigFile(),
    hostKey,
    fingerprint: fingerprintOf(hostKey),
    layout: spec.layout.name,
    vendor: spec.layout.model?.vendor ?? null,
    gpus: gpusOf(spec),
    modelDir: HOST_MODEL_DIR,
    modelDirOnMachine: path.join(p.modelsDir, MODEL_NAME),
    simConfigPath: p.simConfig,
    netns: netnsName(spec.alias),
    fabricInterface: FABRIC_INTERFACE,
    passwordAuth: spec.passwordAuth,
    passwordUser: PASSWORD_USER,
    passwordFile: passwordFile(),
    dir: p.dir,
    dockerEngine: Boolean(spec.dockerEngine),
    hcas: [...(spec.rdma ?? [])],
  };
}

export interface HostCheck {
  netns: boolean;
  anchorPid?: number;
  sshdPid?: number;
  /** Docker hosts: whether one is expected, and its live dockerd. */
  dockerEngine?: boolean;
  dockerdPid?: number;
  /** The SSH identification line when sshd answered, else undefined. */
  banner?: string;
}

export async function checkHost(alias: string, address: string, dockerEngine = false): Promise<HostCheck> {
  const p = hostPaths(alias);
  const netns = await netnsExists(netnsName(alias));
  const banner = netns ? await sshBanner(address).catch(() => undefined) : undefined;
  const docker = dockerEngine ? { dockerEngine, dockerdPid: liveDockerdPid(p) } : {};
  return { netns, anchorPid: liveAnchorPid(alias, p), sshdPid: liveSshdPid(p), banner, ...docker };
}

export const isHealthy = (c: HostCheck): boolean =>
  c.netns && c.anchorPid !== undefined && c.sshdPid !== undefined && c.banner !== undefined && (!c.dockerEngine || c.dockerdPid !== undefined);

/** Writes the host's files: inventory, shims, sim config, checkpoint, /etc overrides, sshd config. */
export async function writeHostFiles(spec: HostSpec, passwordHash: string, timeScale: number): Promise<HostPaths> {
  const p = hostPaths(spec.alias);
  fs.mkdirSync(p.dir, { recursive: true });
  // A host is built from nothing: what an earlier run left in its private folders goes.
  for (const dir of [p.rootHome, p.homeDir, p.optDir, p.srvDir]) {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  }
  fs.chmodSync(p.rootHome, 0o700);
  await ensureHostKey(p.hostKey, spec.alias);
  writePciTree(p.pciDir, spec);
  writeRdmaFiles(p, spec);
  writeDrmTree(p.sysClassDir, spec);
  writeSimConfig(p.simConfig, engineSimConfig(spec, timeScale));
  writeShims(p.binDir, spec, p.simConfig);
  fs.mkdirSync(p.modelsDir, { recursive: true, mode: 0o755 });
  writeCheckpoint(path.join(p.modelsDir, MODEL_NAME));
  writeEtc(p, spec.alias, passwordHash);
  writeSimPythonSite(p, spec.nixl);
  writeWheelhouse(p);
  writeSshdConfig(spec, p);
  if (spec.dockerEngine) writeDockerFiles(spec.alias, p);
  return p;
}

/** Builds a host from nothing; the caller has removed any remains first. */
export async function createHost(spec: HostSpec, passwordHash: string, timeScale: number): Promise<void> {
  const p = await writeHostFiles(spec, passwordHash, timeScale);
  await createHostNetwork(spec.alias, spec.index, spec.address);
  const anchor = await startAnchor(spec, p);
  // Before sshd: a host that answers SSH has its daemon.
  if (spec.dockerEngine) await startDockerd(spec, p, anchor);
  await startSshd(spec, p, anchor);
}

/**
 * Kills every process in the host's network namespace (sshd, sessions, engines, iperf3, and the
 * anchor), then deletes the namespace. SIGTERM first, SIGKILL for what is left after
 * PROCESS_EXIT_TIMEOUT_MS. A docker host's daemon first removes its containers and stops; what is left
 * in its container cgroups is killed last. Returns how many processes were signalled.
 */
export async function destroyHost(alias: string): Promise<number> {
  const p = hostPaths(alias);
  const ns = netnsName(alias);
  await stopDockerd(alias, p);
  const pids = new Set(await netnsPids(ns));
  // Remains of a namespace deleted behind the harness's back are found through the pid files.
  for (const pid of [liveAnchorPid(alias, p), liveSshdPid(p)]) if (pid) pids.add(pid);
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of pids) {
      try {
        process.kill(pid, sig);
      } catch {
        // already gone
      }
    }
  };
  signal("SIGTERM");
  const allGone = async () => ([...pids].every((pid) => !pidAlive(pid)) && (await netnsPids(ns)).length === 0 ? true : undefined);
  try {
    await waitFor(`${alias}: processes exit after SIGTERM (PROCESS_EXIT_TIMEOUT_MS)`, PROCESS_EXIT_TIMEOUT_MS, allGone);
  } catch {
    for (const pid of await netnsPids(ns)) pids.add(pid);
    signal("SIGKILL");
    await waitFor(`${alias}: processes exit after SIGKILL (PROCESS_EXIT_TIMEOUT_MS)`, PROCESS_EXIT_TIMEOUT_MS, allGone);
  }
  await deleteHostNetwork(alias);
  fs.rmSync(p.anchorPid, { force: true });
  fs.rmSync(p.sshdPid, { force: true });
  return pids.size + (await removeDockerCgroups(alias));
}
