import type { FleetSpec, HostSpec } from "../config/types";
import { parseDestination } from "../config/formats";
import { resolveSshAlias, type SshConfig } from "../ssh/ssh-config/resolve";
import type { HostLogin } from "../ssh/login";
import type { PlannedPort } from "../discovery/listeners";
import type { RuntimeProbeSpec } from "../discovery/probe";
import type { RdmaPortRequest } from "../discovery/rdma";
import { sha256Json } from "../digest";
import { engineTransport } from "../launch/plan";

function address(destination: string, withPort: boolean): { user?: string; host: string; port?: number } {
  const parsed = parseDestination(destination, withPort);
  if (!parsed.ok) throw new Error(`destination ${destination}: ${parsed.problem}`);
  return parsed.value;
}

/**
 * Resolves a host's destination the way `ssh` would: an ssh_config alias gives HostName, User, Port,
 * IdentityFile and ProxyJump; explicit config keys win over it. `hosts[].jump` names another host's
 * alias (its own key pin applies) or a `user@host[:port]` destination. The login pins the config's
 * `hostKey` and carries no credentials: they are secrets the caller adds.
 */
export function resolveLogin(spec: FleetSpec, host: HostSpec, sshConfig: SshConfig | undefined): HostLogin {
  const dest = address(host.destination, false);
  const alias = sshConfig && !host.destination.includes("@") ? resolveSshAlias(sshConfig, dest.host) : undefined;
  const jumpRef = host.jump ?? alias?.proxyJump;
  let jump: HostLogin["jump"];
  if (jumpRef) {
    const other = spec.hosts.find((h) => h.alias === jumpRef);
    if (other) {
      const via = resolveLogin(spec, other, sshConfig);
      jump = { alias: other.alias, host: via.host, port: via.port, user: via.user, hostKey: other.hostKey, connectTimeoutS: spec.ssh.connectTimeoutS };
    } else {
      const j = address(jumpRef, true);
      jump = { alias: `jump ${jumpRef}`, host: j.host, port: j.port ?? 22, user: j.user ?? host.user, connectTimeoutS: spec.ssh.connectTimeoutS };
    }
  }
  const explicitUser = host.destination.includes("@") || host.user !== "root";
  return {
    alias: host.alias,
    host: alias?.hostName ?? dest.host,
    port: host.port !== 22 ? host.port : (alias?.port ?? host.port),
    user: explicitUser ? host.user : (alias?.user ?? host.user),
    ...(host.hostKey ? { hostKey: host.hostKey } : {}),
    identityFile: alias?.identityFile,
    connectTimeoutS: spec.ssh.connectTimeoutS,
    maxSessions: spec.ssh.maxSessionsPerHost,
    jump,
  };
}

/** What one host's discovery is measured against, besides how to log in. */
export interface HostDiscoveryPlan {
  readonly modelDir: string;
  readonly runtimeRef: RuntimeProbeSpec;
  readonly devicePaths: string[];
  /** The HCA ports (`rdma.hcas`) of the host's `ucx_rdma` engines; absent when it has none, as before RDMA was read. */
  readonly rdmaPorts?: RdmaPortRequest[];
  readonly plannedPorts: PlannedPort[];
  /** Launch directories of the runbook's engines on this host that the program may adopt (`engines[].runbookRun`). */
  readonly runbookRuns: string[];
  /** Digest of every launch setting that applies to this host's engines. */
  readonly policyDigest: string;
}

export function hostDiscoveryPlan(spec: FleetSpec, host: HostSpec): HostDiscoveryPlan {
  const engines = spec.engines.filter((e) => e.host === host.alias);
  const runtimeRef: RuntimeProbeSpec =
    spec.runtime.kind === "native"
      ? { kind: "native", vllmCommand: spec.runtime.vllmCommand }
      : { kind: "docker", image: spec.runtime.image!, dockerCommand: spec.runtime.dockerCommand };
  const devicePaths = [
    ...new Set(
      engines.flatMap((e) => [...(engineTransport(spec, e).rdma?.devices ?? [])]),
    ),
  ];
  const plannedPorts: PlannedPort[] = engines.flatMap((e) => [
    { engineId: e.id, kind: "engine" as const, port: e.port },
    { engineId: e.id, kind: "attestation" as const, port: e.attestationPort },
    { engineId: e.id, kind: "nixl" as const, port: e.nixlPort },
    ...(e.transferPortRange ? [{ engineId: e.id, kind: "transfer" as const, range: rangeOf(e.transferPortRange) }] : []),
  ]);
  const policyDigest = sha256Json({
    launch: spec.launch,
    model: spec.model,
    runtime: spec.runtime,
    engines: engines.map((e) => ({ id: e.id, gpuIds: e.gpuIds ?? null, overrides: e.overrides ?? null })),
  });
  const runbookRuns = engines.flatMap((e) => (e.runbookRun ? [e.runbookRun] : []));
  const rdmaPorts = hostRdmaPorts(spec, engines);
  return { modelDir: spec.model.checkpointDir, runtimeRef, devicePaths, ...(rdmaPorts.length ? { rdmaPorts } : {}), plannedPorts, runbookRuns, policyDigest };
}

/** Every `<hca>:<port>` of the engines' RDMA settings with its GID index, once each, in config order. */
function hostRdmaPorts(spec: FleetSpec, engines: FleetSpec["engines"]): RdmaPortRequest[] {
  const out: RdmaPortRequest[] = [];
  for (const e of engines) {
    const rdma = engineTransport(spec, e).rdma;
    for (const entry of rdma?.hcas ?? []) {
      const [hca, port] = entry.split(":");
      const req = { hca, port: Number(port), gidIndex: rdma?.gidIndex ?? null };
      if (!out.some((r) => r.hca === req.hca && r.port === req.port && r.gidIndex === req.gidIndex)) out.push(req);
    }
  }
  return out;
}

function rangeOf(text: string): readonly [number, number] {
  const [lo, hi] = text.split("-").map(Number);
  return [lo, hi];
}
