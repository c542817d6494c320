/**
 * What a FabricEdge's measurement comes to, for either transport: both sides' path as observed, the
 * figure kept, its verdict against the budget, and the evidence record's status. No I/O: the provider
 * (dynamic-providers/fabric-edge) observes, measures and records.
 */
import { gidDecimal } from "../discovery/rdma";
import { verdictDetail, type FabricVerdict } from "./budget";
import type { IbWriteBwReport } from "./ib-write-bw";
import type { LinkFingerprint } from "./fingerprint";
import { FABRIC_DIAGNOSIS } from "./matrix";
import type { PathFingerprint, PathObservation } from "./path";
import type { RdmaSides } from "./rdma-observe";
import type { EdgeNames } from "./tool-run";
import { FabricError } from "./errors";

/** Both hosts' sides of an edge's path, observed without traffic. */
export interface Sides {
  forward: PathFingerprint;
  back: PathFingerprint;
  seen: { source: PathObservation; destination: PathObservation };
  /** `ucx_rdma` only: both HCA ports, the GID-to-GID routes, and what stops them carrying the traffic. */
  rdma: RdmaSides | null;
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

export interface EdgeVerdict {
  verdict: FabricVerdict;
  verdictReason: string;
  marginGbps: number | null;
}

/** The evidence record's status and reasons. */
export type RecordVerdict = { status: "pass" | "fail" | "invalid"; reasons: string[] };

export function digestsOf(sides: Sides): PathDigests {
  return { forwardPath: sides.forward.digest, returnPath: sides.back.digest };
}

export function problemsOf(sides: Sides): string[] {
  const side = (f: PathFingerprint, which: string) => (f.ok ? f.problems.map((p) => `${which}: ${p}`) : [f.reason]);
  return [...side(sides.forward, "forward path"), ...side(sides.back, "return path")];
}

/** Refuses, before anything starts, a measurement that would not take the fabric path. */
export function refuseOffFabric(i: EdgeNames, sides: Sides): void {
  const problems = problemsOf(sides);
  if (problems.length) {
    throw new FabricError(
      "NARWHAL_FABRIC_PATH",
      `edge ${i.edgeId}: the measurement would not take the fabric path: ${problems.join("; ")}. Diagnose ${FABRIC_DIAGNOSIS.slice(0, 2).join(" and ")}; nothing was measured`,
    );
  }
}

/** Only called once the measurement refused paths that could not be fingerprinted. */
export function fingerprintsOf(sides: Sides): { forward: LinkFingerprint; return: LinkFingerprint } {
  const ok = (f: PathFingerprint) => (f as Extract<PathFingerprint, { ok: true }>).fingerprint;
  return { forward: ok(sides.forward), return: ok(sides.back) };
}

/** The edge's verdict against `requiredGbps`; a measurement that carries its own invalidity stays invalid. */
export function verdictFields(m: EdgeMeasurement, requiredGbps: number): EdgeVerdict {
  if (m.invalidReason) return { verdict: "invalid", verdictReason: m.invalidReason, marginGbps: null };
  const v = verdictDetail({ gbps: m.gbps, samples: m.samplesGbps }, { requiredGbps });
  return { verdict: v.verdict, verdictReason: v.reason, marginGbps: v.marginGbps };
}

/** The evidence record's status for a verdict. */
export function recordVerdict(v: Pick<EdgeVerdict, "verdict" | "verdictReason">): RecordVerdict {
  return { status: v.verdict === "met" ? "pass" : v.verdict === "below" ? "fail" : "invalid", reasons: v.verdict === "met" ? [] : [v.verdictReason] };
}

/** A tool's last lines on one line: what a refusal quotes of its output. */
export const tail = (text: string, lines = 6) =>
  text
    .trim()
    .split("\n")
    .slice(-lines)
    .map((l) => l.trim())
    .filter(Boolean)
    .join(" | ");

/** Where an ib_write_bw report disagrees with the ports it was meant to run on: a figure of another path. */
export function rdmaReportProblems(rdma: RdmaSides, r: IbWriteBwReport): string[] {
  const [s, d] = [rdma.source!, rdma.destination!];
  const out: string[] = [];
  if (r.device !== null && r.device !== s.facts.hca) out.push(`the client's report names device ${r.device}, not ${s.facts.hca}`);
  if (s.gid) {
    if (r.gidIndex !== s.gid.index) out.push(`the client's report names GID index ${r.gidIndex ?? "none"}, not ${s.gid.index}`);
    if (r.localGid !== null && r.localGid !== gidDecimal(s.gid.gid)) out.push(`the client's local GID ${r.localGid} is not ${s.host}'s GID ${s.gid.gid}`);
    if (d.gid && r.remoteGid !== null && r.remoteGid !== gidDecimal(d.gid.gid)) out.push(`the client's remote GID ${r.remoteGid} is not ${d.host}'s GID ${d.gid.gid}`);
  }
  return out;
}
