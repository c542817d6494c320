/** What the evidence report shows, taken from the evidence store (and the stack's pointers into it). */
import type { EvidenceRecord } from "../../evidence";
import type { ProfileRow } from "../../profiling";
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
  readonly invalid: readonly InvalidEvidence[];
}
