/**
 * One observation of a host over the login HostDiscovery opened (dynamic-providers/host-discovery): what
 * its engines will use (hardware, fabric, model, runtime, listeners, devices) and its checkpoint's hash.
 */
import { hashCheckpointRemote, type CheckpointManifest } from "../checkpoint";
import { sha256Json } from "../digest";
import { capture, exitStatusOf, scriptCommand, type Attempt } from "../evidence/failed-attempt";
import { claimScript, stackFolder } from "../fleet/host-cleanup";
import type { SshSession } from "../ssh/client";
import { chooseFabricAddress } from "./fabric-address";
import { keptFabricAddress, ownPidsScript, type HostDiscoveryFacts } from "./facets";
import { blockingProblems, parseProbe, probeCommand, type ProbeOptions, type RuntimeProbeSpec } from "./probe";

const CHECKPOINT_TIMEOUT_S = 1800;

/** What is probed (the runtime as the inputs name it), and the stack's folder on the host. */
export interface HostToObserve extends Omit<ProbeOptions, "ignorePids" | "runtime"> {
  readonly modelDir: string;
  readonly runtimeRef: RuntimeProbeSpec;
  readonly stateDir: string;
  readonly stack: string;
  /** The runbook's launch directories: the engines running from them are this program's own. */
  readonly runbookRuns?: ReadonlyArray<string>;
}

export interface ObserveOptions {
  previous?: CheckpointManifest;
  /** Before a launch, the planned ports must be free of all but this stack's own engines. */
  preLaunch: boolean;
  recordedFabricAddress?: string;
  claim?: string;
  attempt?: Attempt;
}

export interface Observation {
  facts: HostDiscoveryFacts;
  rehashed: string[];
  probeSha256: string;
  startedAt: string;
  endedAt: string;
}

/**
 * Over one login: the probe, then the checkpoint hash (reusing `previous` fingerprints when given), then a
 * first discovery's claim on the stack's folder. A re-observation (`recordedFabricAddress` given) never
 * fails on the fabric address (lib/discovery/facets.ts, keptFabricAddress).
 */
export async function observeHost(ssh: SshSession, i: HostToObserve, opts: ObserveOptions): Promise<Observation> {
  const startedAt = new Date().toISOString();
  const ownPids = opts.preLaunch
    ? (await ssh.exec(ownPidsScript(i.stateDir, i.stack, i.runbookRuns ?? []), { timeoutS: 10, name: "own engine and sidecar pids" })).stdout.split(/\s+/).filter(Boolean).map(Number)
    : [];
  const probeOpts: ProbeOptions = {
    alias: i.alias,
    fabricInterface: i.fabricInterface,
    fabricAddressChoice: i.fabricAddressChoice,
    modelDir: i.modelDir,
    runtime: i.runtimeRef,
    devicePaths: i.devicePaths,
    rdmaPorts: i.rdmaPorts,
    plannedPorts: opts.preLaunch ? i.plannedPorts : [],
    ignorePids: ownPids,
  };
  const probe = probeCommand(probeOpts);
  const probeStarted = new Date().toISOString();
  const output = await ssh.run(probe.command, { stdin: probe.stdin, timeoutS: probe.timeoutS, name: "discovery probe" }).catch((err: unknown) => {
    opts.attempt?.commands.push(scriptCommand(probe.stdin, i.alias, exitStatusOf(err), probeStarted));
    throw err;
  });
  if (opts.attempt) {
    opts.attempt.commands.push(scriptCommand(probe.stdin, i.alias, 0, probeStarted));
    capture(opts.attempt, "discovery-probe.txt", output);
  }
  const recorded = opts.recordedFabricAddress;
  const facts = parseProbe(output, recorded === undefined ? probeOpts : { ...probeOpts, fabricAddressChoice: undefined });
  // A re-observation records what it sees: a moved address or a port gone down is the refresh's finding
  // (the fabric facet; the edges' fingerprints), not a failed refresh.
  const problems = blockingProblems(recorded === undefined ? facts : { ...facts, errors: facts.errors.filter((e) => e.section !== "fabric" && e.section !== "rdma") });
  if (problems.length > 0) throw new Error(problems.join("\n"));
  const hashed = await hashCheckpointRemote(ssh, i.modelDir, opts.previous, { timeoutS: CHECKPOINT_TIMEOUT_S });
  // Last, once the observation stands: from here on this discovery's delete owns the stack's folder.
  if (opts.claim) await ssh.run(claimScript(stackFolder(i.stateDir, i.stack), opts.claim), { timeoutS: 10, name: "claim the stack's folder" });
  return {
    facts: {
      hostname: facts.hostname,
      hostKey: ssh.hostKey.line,
      hostKeyFingerprint: ssh.hostKey.fingerprint,
      accelerators: facts.accelerators,
      fabricAddress:
        recorded === undefined ? chooseFabricAddress(i.alias, i.fabricInterface, [...facts.fabric.addresses], i.fabricAddressChoice) : keptFabricAddress(recorded, facts.fabric.addresses),
      model: facts.model!.requirements,
      runtime: facts.runtime,
      rdma: facts.rdma,
      checkpoint: hashed.manifest,
    },
    rehashed: hashed.rehashed,
    probeSha256: sha256Json(probe.stdin),
    startedAt,
    endedAt: new Date().toISOString(),
  };
}
