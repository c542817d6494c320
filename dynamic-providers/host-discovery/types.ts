import type { AcceleratorInventory } from "../../lib/discovery/accelerators";
import type { ModelRequirements } from "../../lib/discovery/model";
import type { RuntimeIdentity } from "../../lib/discovery/runtime";
import type { PlannedPort } from "../../lib/discovery/listeners";
import type { CheckpointManifest } from "../../lib/checkpoint";
import type { RuntimeProbeSpec } from "../../lib/discovery/probe";
import type { RdmaInventory, RdmaPortRequest } from "../../lib/discovery/rdma";
import type { StoredLogin } from "../../lib/ssh/stored-login";

/**
 * What discovery is measured against, plus how to log in (plain: these exist only inside provider calls).
 * The login fields are a StoredLogin under the names stacks have always stored; readLogin reads them.
 */
export interface HostDiscoveryInputs {
  alias: string;
  host: string;
  port: number;
  user: string;
  privateKey?: string;
  password?: string;
  /** Pinned in config; when absent the key seen at first contact is recorded. */
  pinnedHostKey?: string;
  /** A bastion to hop through, stored as `storedJump` writes it (its own key pinned or first-contact). */
  jump?: StoredLogin;
  allowFirstContact: boolean;
  connectTimeoutS: number;
  /** ssh.maxSessionsPerHost: logins to this host open at once from the provider process. */
  maxSessions: number;
  fabricInterface: string;
  /** The operator's choice when the interface has several global addresses. */
  fabricAddressChoice?: string;
  modelDir: string;
  /** Which runtime's identity to read: the host's vllm command, or the engine image. */
  runtimeRef: RuntimeProbeSpec;
  devicePaths: string[];
  /** HCA ports this host's `ucx_rdma` engines use: discovery refuses one that is not ACTIVE or lacks its GID index. Absent without RDMA engines. */
  rdmaPorts?: RdmaPortRequest[];
  /** Ports this host's engines will bind: busy ones stop discovery (our own engines excepted). */
  plannedPorts: PlannedPort[];
  /** The runbook's launch directories on this host: the engines running from them hold their planned ports until adopted or replaced. */
  runbookRuns?: string[];
  /** Digest of the launch policy that applies to this host's engines. */
  policyDigest: string;
  /** Names the per-stack run folders on the host and the evidence folder on this machine. */
  stack: string;
  /** The host's `stateDir`, under which this stack's engines and sidecars keep their pid files. */
  stateDir: string;
  /** `hosts[].retainOnDestroy`: leave `<stateDir>/<stack>` on the host when the stack is destroyed. */
  retainOnDestroy?: boolean;
}

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

export type HostDiscoveryOutputs = HostDiscoveryInputs &
  HostDiscoveryFacts & {
    /** Facets as measured when this record was made. */
    measured: FacetDigests;
    /** Facets as last observed (by create, or by `read` during a refresh). */
    observed: FacetDigests;
    /** sha256 over the measured facets: what later evidence records as "measured against this host". */
    factsDigest: string;
    evidence: { relativePath: string; digest: string };
    observedAt: string;
    /**
     * The key the facets were measured under, kept once a refresh logged in with a newer key the operator
     * pinned (then `hostKey` is that newer key, which every later login uses).
     */
    measuredHostKey?: string;
    /** The token this discovery wrote into the stack's folder on the host; its delete removes the folder while it still holds. */
    claim?: string;
  };
