/** Preflight's inputs as one zod schema (the fleet document, engines, pair selection and repeats), their type, and the outputs. */
import { z } from "zod";
import { documentEngines } from "../../lib/preflight/document-plan";
import type { GateNote, RunStatus, RunSummary } from "../../lib/preflight/status";
import type { GateResult } from "../../lib/preflight/types";
import type { TransferRecord } from "../../lib/preflight/transfer";
import type { ProfileRow } from "../../lib/profiling/store";
import type { StoredLogin } from "../../lib/ssh/stored-login";
import { digest, given, got, oneOf, typedAs, whole } from "../../lib/provider-fields";
import { hasUnknown } from "../../lib/unknown";
import { across, each, inOrder } from "../../lib/input-rules";
import type { EngineHostSecrets, EngineLogAccess } from "./engine-logs";

/** One engine as preflight checks it: which generation, attestation and profile it must be; its refusals named by its id. */
const engine = (id: unknown) => {
  const k = (field: string) => `engines[${String(id)}].${field}`;
  return z.object({
    engineId: given<string>(),
    generationDigest: digest(k("generationDigest")),
    attestationDigest: digest(k("attestationDigest")),
    launchDigest: given<string>().optional(),
    profileDigest: digest(k("profileDigest")),
  });
};
export type PreflightEngine = z.infer<ReturnType<typeof engine>>;

/** The document's engines, each given its generation, attestation and profile. */
const againstDocument = across((news, refuse) => {
  if (hasUnknown(news.fleetDocument)) return;
  try {
    const ids = documentEngines(news.fleetDocument as Record<string, unknown>).map((e) => e.iid);
    if (Array.isArray(news.engines)) {
      const given = (news.engines as Array<{ engineId: string }>).map((e) => e.engineId);
      const missing = ids.filter((id) => !given.includes(id));
      if (missing.length) refuse("engines", `engines: no generation, attestation and profile given for ${missing.join(", ")}`);
    }
  } catch (err) {
    refuse("fleetDocument", (err as Error).message);
  }
});

const fields = z.object({
  // Absent passes, as it always has (the program always gives the engines); the type says they are there.
  engines: typedAs<PreflightEngine[]>(z.unknown().superRefine(each((e) => engine(e.engineId))).optional()),
  pairs: oneOf("pairs", ["mesh", "ring"]),
  schedule: oneOf("schedule", ["concurrent", "sequential"]),
  /** Fail on a degraded run too (`preflight.strict`); a failed run always fails. Absent = false. */
  strict: z.boolean({ error: got("strict", "must be true or false") }).optional(),
  repeats: whole(1, 100, got("repeats", "must be an integer from 1 to 100")),
  stack: given<string>(),
  /** The fleet document the router will load (engines, roles, model, SLOs, deadlines, budgets, engine_contract). */
  fleetDocument: given<Record<string, unknown>>(),
  /** The rows of the profile store at `profiles.path`, and the store's digest. */
  profiles: given<ProfileRow[]>(),
  profileStoreDigest: given<string>(),
  /**
   * The fabric the consume probes cross: the resource ID of each directed edge's measurement, which
   * only a new measurement changes (a budget change re-judges an edge in place and keeps its ID).
   */
  fabricEdges: given<string[]>().optional(),
  apiKey: given<string>(),
  /**
   * Where each engine's log is and the login to its host: when a gate line fails, the tail of each engine
   * it names is kept with the record. Read at create only (in neither diff list): how logs are reached
   * changes no verdict.
   */
  engineLogs: given<EngineLogAccess[]>().optional(),
  /** The engine hosts' SSH secrets, by host alias. */
  engineHostSecrets: given<EngineHostSecrets>().optional(),
  /** Probes run from the router host's network position when set. */
  via: given<StoredLogin>().optional(),
  viaPrivateKey: given<string>().optional(),
  viaPassword: given<string>().optional(),
});

export type PreflightInputs = z.infer<typeof fields>;

/** PreflightInputs, in the order their refusals are reported. */
export const preflightInputs = inOrder(againstDocument, fields);

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
