import type { GateNote, RunStatus, RunSummary } from "../../lib/preflight/status";
import type { GateResult } from "../../lib/preflight/types";
import type { PairMode } from "../../lib/preflight/pairs";
import type { ScheduleMode } from "../../lib/preflight/schedule";
import type { TransferRecord } from "../../lib/preflight/transfer";
import type { ProfileRow } from "../../lib/profiling/store";
import type { StoredLogin } from "../../lib/ssh/stored-login";
import type { EngineHostSecrets, EngineLogAccess } from "./engine-logs";

/** One engine as preflight checks it: where it is and which generation, attestation and profile it must be. */
export interface PreflightEngine {
  engineId: string;
  generationDigest: string;
  attestationDigest: string;
  launchDigest?: string;
  profileDigest: string;
}

export interface PreflightInputs {
  stack: string;
  /** The fleet document the router will load (engines, roles, model, SLOs, deadlines, budgets, engine_contract). */
  fleetDocument: Record<string, unknown>;
  engines: PreflightEngine[];
  /** The rows of the profile store at `profiles.path`, and the store's digest. */
  profiles: ProfileRow[];
  profileStoreDigest: string;
  /**
   * The fabric the consume probes cross: the resource ID of each directed edge's measurement, which
   * only a new measurement changes (a budget change re-judges an edge in place and keeps its ID).
   */
  fabricEdges?: string[];
  pairs: PairMode;
  repeats: number;
  schedule: ScheduleMode;
  /** Fail on a degraded run too (`preflight.strict`); a failed run always fails. Absent = false. */
  strict?: boolean;
  apiKey: string;
  /**
   * Where each engine's log is and the login to its host: when a gate line fails, the tail of each engine
   * it names is kept with the record. Read at create only (in neither diff list): how logs are reached
   * changes no verdict.
   */
  engineLogs?: EngineLogAccess[];
  /** The engine hosts' SSH secrets, by host alias. */
  engineHostSecrets?: EngineHostSecrets;
  /** Probes run from the router host's network position when set. */
  via?: StoredLogin;
  viaPrivateKey?: string;
  viaPassword?: string;
}

export interface PreflightOutputs extends PreflightInputs {
  /** `sha256:` of the fleet document as the router loads it. */
  fleetDocumentDigest: string;
  gates: GateResult[];
  /** The whole run as narwhal-check decides it: pass, degraded (some line skipped) or fail. */
  status: RunStatus;
  /** narwhal-check's own words for the same run: its `--format json` status and exit code. */
  narwhal: RunSummary["narwhal"];
  /** Every skipped line with its gate: why the run is degraded. */
  skipped: GateNote[];
  /** Every warning with its gate (changes no outcome). */
  warnings: GateNote[];
  /** Every probe of every pair, logs left in the evidence. */
  transfers: Array<Omit<TransferRecord, "logs">>;
  rounds: number;
  evidence?: { relativePath: string; digest: string };
  ranAt: string;
  wallSeconds: number;
}
