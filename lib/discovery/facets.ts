/**
 * What host discovery observed, one digest per facet, so a refresh names what changed on the host; and
 * the pieces of an observation that need no login: the pids that may hold planned ports, and the fabric
 * address a re-observation keeps.
 */
import type { AcceleratorInventory } from "./accelerators";
import type { ModelRequirements } from "./model";
import type { RuntimeIdentity } from "./runtime";
import type { RdmaInventory } from "./rdma";
import type { CheckpointManifest } from "../checkpoint";
import { sha256Json } from "../digest";
import { runbookListenerPidsScript } from "../runtime/runbook-survey";
import { shq } from "../shell";

/** The observed facts, one digest per facet, so a refresh names what changed on the host. */
export interface FacetDigests {
  identity: string;
  accelerators: string;
  fabric: string;
  model: string;
  runtime: string;
  checkpoint: string;
}

export interface HostDiscoveryFacts {
  hostname: string;
  /** The verified host key line, pinned from here on by everything that logs in to this host. */
  hostKey: string;
  hostKeyFingerprint: string;
  accelerators: AcceleratorInventory;
  fabricAddress: string;
  model: ModelRequirements;
  runtime: RuntimeIdentity | null;
  /**
   * Every HCA under /sys/class/infiniband (ports, state, link layer, rate, MTU, GID table, netdev), as
   * recorded; null on a discovery made before HCAs were read. Not a facet: an HCA's change moves the
   * fabric edges that use it (their fingerprints), not the host's discovery.
   */
  rdma?: RdmaInventory | null;
  /** Per-file manifest with fingerprints, so re-discovery re-reads only changed files. */
  checkpoint: CheckpointManifest;
}

export function facetsOf(f: HostDiscoveryFacts): FacetDigests {
  const { packagesUnknownReason: _reason, ...runtime } = (f.runtime ?? {}) as Record<string, unknown>;
  return {
    identity: sha256Json({ hostname: f.hostname, hostKey: f.hostKey }),
    accelerators: sha256Json(f.accelerators),
    fabric: sha256Json(f.fabricAddress),
    model: sha256Json(f.model),
    runtime: sha256Json(runtime),
    checkpoint: `sha256:${f.checkpoint.modelTreeSha256}`,
  };
}

/**
 * Prints the pids that may hold this stack's planned ports without a conflict. Our own engines and their
 * attestation sidecars hold them once started, and so does a runbook engine the start will adopt or
 * replace, and its sidecar, which the program's sidecar start stops; only someone else's listener is a conflict.
 */
export function ownPidsScript(stateDir: string, stack: string, runbookRuns: ReadonlyArray<string>): string {
  const ours = `${shq(stateDir)}/${shq(stack)}`;
  const runbook = runbookRuns.map((run) => `sed -n 's/.*"pid": *\\([0-9][0-9]*\\).*/\\1/p' ${shq(`${run}/native-process.json`)} 2>/dev/null;`).join(" ");
  return `cat ${ours}/engines/*/pid ${ours}/attestation/*/pid 2>/dev/null; ${runbook} ${runbookListenerPidsScript(runbookRuns)} true`;
}

/**
 * The fabric address a re-observation records: while the recorded address is still on the interface it
 * stands, even beside a new one; otherwise the fabric facet moves, so the preview shows the replacement
 * and the fresh discovery reports what to choose.
 */
export function keptFabricAddress(recorded: string, addresses: ReadonlyArray<string>): string {
  return addresses.includes(recorded) ? recorded : `unresolved: ${addresses.join(", ") || "no global address"}`;
}
