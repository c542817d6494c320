/** HostDiscovery's inputs as one zod schema (what a login and the host's folders are built from, refused before anything remote), the types it produces, and the outputs. */
import { z } from "zod";
import type { FacetDigests, HostDiscoveryFacts } from "../../lib/discovery/facets";
import type { PlannedPort } from "../../lib/discovery/listeners";
import type { RuntimeProbeSpec } from "../../lib/discovery/probe";
import type { RdmaPortRequest } from "../../lib/discovery/rdma";
import { absolutePath, got, positiveWhole, seconds, stackName, tcpPort, text } from "../../lib/provider-fields";
import type { StoredLogin } from "../../lib/ssh/stored-login";

const list = <T>(k: string) => z.array(z.custom<T>(), { error: got(k, "must be a list") });

/**
 * What discovery is measured against, plus how to log in (plain: these exist only inside provider calls).
 * The login fields are a StoredLogin under the names stacks have always stored; readLogin reads them.
 */
const fields = z.object({
  alias: text("alias"),
  host: text("host"),
  port: tcpPort("port"),
  user: text("user"),
  connectTimeoutS: seconds("connectTimeoutS"),
  /** ssh.maxSessionsPerHost: logins to this host open at once from the provider process. */
  maxSessions: positiveWhole("maxSessions"),
  fabricInterface: text("fabricInterface"),
  modelDir: absolutePath("modelDir"),
  devicePaths: list<string>("devicePaths"),
  /** Ports this host's engines will bind: busy ones stop discovery (our own engines excepted). */
  plannedPorts: list<PlannedPort>("plannedPorts"),
  /** Digest of the launch policy that applies to this host's engines. */
  policyDigest: z.string({ error: got("policyDigest", "must be sha256:<64 hex>") }).regex(/^sha256:[0-9a-f]{64}$/, { error: got("policyDigest", "must be sha256:<64 hex>") }),
  /** Names the per-stack run folders on the host and the evidence folder on this machine; with stateDir, the folder a destroy removes. */
  stack: stackName(),
  /** The host's `stateDir`, under which this stack's engines and sidecars keep their pid files. */
  stateDir: absolutePath("stateDir"),
  privateKey: z.string().optional(),
  password: z.string().optional(),
  /** Pinned in config; when absent the key seen at first contact is recorded. */
  pinnedHostKey: z.string().optional(),
  /** A bastion to hop through, stored as `storedJump` writes it (its own key pinned or first-contact). */
  jump: z.custom<StoredLogin>().optional(),
  allowFirstContact: z.custom<boolean>(),
  /** The operator's choice when the interface has several global addresses. */
  fabricAddressChoice: z.string().optional(),
  /** Which runtime's identity to read: the host's vllm command, or the engine image. */
  runtimeRef: z.custom<RuntimeProbeSpec>(),
  /** HCA ports this host's `ucx_rdma` engines use: discovery refuses one that is not ACTIVE or lacks its GID index. Absent without RDMA engines. */
  rdmaPorts: z.custom<RdmaPortRequest[]>().optional(),
  /** The runbook's launch directories on this host: the engines running from them hold their planned ports until adopted or replaced. */
  runbookRuns: z.custom<string[]>().optional(),
  /** `hosts[].retainOnDestroy`: leave `<stateDir>/<stack>` on the host when the stack is destroyed. */
  retainOnDestroy: z.custom<boolean>().optional(),
});
export type HostDiscoveryInputs = z.infer<typeof fields>;

/** The inputs the check judges; the others are typed only. */
export const discoveryInputs = fields.pick({
  alias: true, host: true, port: true, user: true, connectTimeoutS: true, maxSessions: true, fabricInterface: true,
  modelDir: true, devicePaths: true, plannedPorts: true, policyDigest: true, stack: true, stateDir: true,
});

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
