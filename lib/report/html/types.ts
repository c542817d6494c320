/** What the evidence report shows, taken from the evidence store (and the stack's pointers into it). */
import type { EvidenceRecord } from "../../evidence/record";
import type { ProfileRow } from "../../profiling/store";
import type { FabricVerdict } from "../../fabric/budget";
import type { GateName } from "../../preflight/types";

/** A record read from the store with its bytes checked against its digest. */
export interface StoredRecord {
  readonly relativePath: string;
  readonly digest: string;
  readonly record: EvidenceRecord;
}

/** Where a shown record came from and when it was measured. */
export interface Provenance {
  readonly relativePath: string;
  readonly digest: string;
  readonly startedAt: string;
  readonly endedAt: string;
  readonly status: EvidenceRecord["verdict"]["status"];
  readonly reasons: readonly string[];
  /** "stack": the stack's outputs point at this record; "newest": the newest of its kind and subject in the store. */
  readonly chosenBy: "stack" | "newest";
}

/** One engine's profile: the row narwhal loads and, when its sidecar entry reads, every raw observation. */
export interface ProfileView {
  readonly engineId: string;
  readonly provenance: Provenance;
  readonly row: ProfileRow;
  /** `[input tokens, seconds]`, every timing. */
  readonly prefill: ReadonlyArray<readonly [number, number]>;
  /** Each length's median: what the quadratic is fitted over. */
  readonly prefillFitPoints: ReadonlyArray<readonly [number, number]>;
  readonly prefillBlockTokens: number | null;
  /** `[active requests, resident KV tokens, seconds per token]`. */
  readonly decode: ReadonlyArray<readonly [number, number, number]>;
  /** Why the raw observations are not shown, when they are not. */
  readonly samplesProblem?: string;
}

export interface HeatCell {
  readonly source: string;
  readonly destination: string;
  readonly gbps: number | null;
  readonly requiredGbps: number;
  readonly verdict: FabricVerdict;
  readonly reason: string;
  readonly retransmits: number | null;
  /** When the edge's figure was measured (its fabric-edge record), when that record is in the store. */
  readonly measuredAt?: string;
}

export interface FabricView {
  readonly provenance: Provenance;
  readonly hosts: readonly string[];
  readonly cells: readonly HeatCell[];
}

export interface PreflightCell {
  readonly status: "ok" | "fail" | "skip";
  readonly messages: readonly string[];
}

export interface PreflightView {
  readonly provenance: Provenance;
  readonly gates: readonly GateName[];
  /** Row subjects in order: engines, then `producer -> consumer` pairs, then `fleet` for lines about no one. */
  readonly subjects: readonly string[];
  /** `cells[subject][gate]`, absent where the gate said nothing about the subject. */
  readonly cells: Readonly<Record<string, Partial<Record<GateName, PreflightCell>>>>;
  readonly rounds: number | null;
  /** The run as narwhal-check decides it, with its skips and warnings; null in records from before it was kept. */
  readonly run: { readonly status: string; readonly skipped: readonly string[]; readonly warnings: readonly string[] } | null;
}

export interface IdentityRow {
  readonly engineId: string;
  readonly generation?: {
    readonly provenance: Provenance;
    readonly host: string | null;
    readonly version: string | null;
    readonly generationDigest: string | null;
    readonly processStartTime: number | null;
  };
  readonly attestation?: {
    readonly provenance: Provenance;
    readonly attestationDigest: string | null;
    readonly launchDigest: string | null;
    readonly generationDigest: string | null;
  };
  /** The profile's measured-against generation, to show whether it binds the proved one. */
  readonly profileGenerationDigest?: string | null;
}

/** One capacity-trial point (a `load-trial` record) as the report draws it; a figure the record lacks is null. */
export interface TrialPointView {
  readonly pointId: string;
  readonly provenance: Provenance;
  /** The configured offered rate, requests per second: the x of every mark. */
  readonly offeredRate: number;
  readonly requests: number | null;
  /** The send rate the client kept (`achieved_send_rate`) and the completions per second (`request_throughput`). */
  readonly achievedRate: number | null;
  readonly throughput: number | null;
  readonly p50TtftMs: number | null;
  readonly p99TtftMs: number | null;
  readonly p50TpotMs: number | null;
  readonly goodFraction: number | null;
  /** Failed requests (`failed`). */
  readonly errors: number | null;
  readonly predicted: { readonly ttftMs: number; readonly tpotMs: number } | null;
  readonly departure: { readonly ttft: number; readonly tpot: number; readonly bound: number; readonly flagged: boolean } | null;
  readonly slo: { readonly ttftMs: number; readonly tpotMs: number } | null;
  /** The prediction from near zero to the profiled range's maximum rate. */
  readonly curve: ReadonlyArray<{ readonly rate: number; readonly ttftMs: number; readonly tpotMs: number }>;
  /** `pass`, `slo-miss`, `unreconciled`, or what else the record says (anything but `pass` is marked). */
  readonly verdict: string;
  /** The verdict's reasons, then each reconciliation cause not already among them. */
  readonly reasons: readonly string[];
}

/** Gate G's capacity trial: its points in offered-rate order, and the records that could not be drawn. */
export interface CapacityView {
  readonly points: readonly TrialPointView[];
  readonly unreadable: readonly InvalidEvidence[];
}

export interface InvalidEvidence {
  readonly relativePath: string;
  readonly reason: string;
}

export interface ReportData {
  readonly stack: string;
  readonly generatedAt: string;
  /** Whether the stack's outputs chose the records, or the store alone did. */
  readonly selection: "stack outputs" | "newest in store";
  readonly profiles: readonly ProfileView[];
  readonly fabric?: FabricView;
  readonly preflight?: PreflightView;
  readonly identities: readonly IdentityRow[];
  /** Absent when the store holds no `load-trial` record: the page then has no capacity section. */
  readonly capacity?: CapacityView;
  readonly invalid: readonly InvalidEvidence[];
}
