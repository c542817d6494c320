import type { StoredLogin } from "../../lib/ssh/stored-login";
import type { FabricVerdict } from "../../lib/fabric/budget";
import type { LinkFingerprint } from "../../lib/fabric/fingerprint";
import type { RdmaEnd, Transport } from "../../lib/fabric/mesh";

/** One end of the edge as measured: which machine, which interface, which address. */
export interface EdgeEndpoint {
  /** Host alias in the fleet config. */
  alias: string;
  /** Where the config says the alias is (`hosts[].destination`'s host): another machine is another path. */
  sshHost: string;
  /** From the config. */
  fabricInterface: string;
  /** The config's choice among the interface's addresses, when it makes one. */
  fabricAddressChoice?: string;
  /** The key discovery verified: every login to the machine is pinned to it (a re-pinned key is no new path). */
  hostKey: string;
  /** The address discovery found on the interface: the server binds it (destination), the client binds it (source). */
  fabricAddress: string;
}

/** iperf3's test length and parallel streams (a TCP edge). */
export interface TcpTool {
  durationS: number;
  streams: number;
}

/** `ib_write_bw`'s message size (`-s`, bytes) and iterations (`-n`) (an RDMA edge). */
export interface RdmaTool {
  size: number;
  iterations: number;
}

/** What a directed edge's measurement is taken against, plus how to reach its hosts. */
export interface FabricEdgeInputs {
  /** Names the evidence folder. */
  stack: string;
  /** `<source>-><destination>`. */
  edgeId: string;
  source: EdgeEndpoint;
  destination: EdgeEndpoint;
  transport: Transport;
  /** HCA ports for `ucx_rdma`; absent for tcp. */
  rdma?: { source: RdmaEnd; destination: RdmaEnd };
  /** The tool's settings, part of what the figure means: iperf3's (tcp) or ib_write_bw's (ucx_rdma). */
  tool: TcpTool | RdmaTool;
  /** The iperf3 server's port on the destination (checked free first); which one is used does not change the figure. */
  iperfPort: number;
  /** `ucx_rdma`: ib_write_bw's TCP exchange port (`-p`) on the destination, checked free first; default 18515. */
  rdmaPort?: number;
  /**
   * How to log in to each end: the key and password travel separately, as secrets, and the pinned key and
   * alias are the endpoint's. Stored without them, the bastion with `pinnedHostKey` (see `storedJump`).
   */
  sourceLogin: StoredLogin;
  destinationLogin: StoredLogin;
  sourcePrivateKey?: string;
  sourcePassword?: string;
  destinationPrivateKey?: string;
  destinationPassword?: string;
  /** The budget the edge is held to: changing it re-evaluates the verdict, never re-measures. */
  requiredGbps: number;
  /** Whose budget that is, for the verdict's record. */
  budget: { governingEngine: string; budgetKey: string; formula: string };
  /** Bounded wait for another edge's measurement to finish before this one refuses. */
  lockWaitS: number;
}

/** The fingerprint digest of each side: the source's forward path and the destination's return path. */
export interface PathDigests {
  forwardPath: string;
  returnPath: string;
}

/** The recorded measurement: never rewritten after create. */
export interface EdgeMeasurement {
  /** Received Gbit/s over the whole test. */
  gbps: number;
  /** Every per-interval sample, Gbit/s, in order (warm-up intervals excluded). */
  samplesGbps: number[];
  sentGbps: number | null;
  /** iperf3: TCP retransmits; ib_write_bw: the sender HCA port's retransmission counters' growth (null when not exposed). */
  retransmits: number | null;
  /** Why the figure cannot be judged (an RDMA test whose port counters did not see its traffic); absent when it can. */
  invalidReason?: string;
  /** The client's start and end on this machine's clock: the serialisation record. */
  startedAt: string;
  endedAt: string;
}

export type FabricEdgeOutputs = FabricEdgeInputs & {
  measurement: EdgeMeasurement;
  fingerprint: { forward: LinkFingerprint; return: LinkFingerprint };
  /** As measured at create. */
  measured: PathDigests;
  /** As last observed (create, or `read` during a refresh); a difference replaces the edge. */
  observed: PathDigests;
  /** Why `observed` differs, when a side could not be fingerprinted at the last refresh. */
  observedProblems: string[];
  verdict: FabricVerdict;
  verdictReason: string;
  marginGbps: number | null;
  evidence: { relativePath: string; digest: string };
};
