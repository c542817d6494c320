/**
 * The contract gate's check of one sidecar answer (narwhal's `verify_attestation` as preflight applies
 * it): the digest covers the answer, the attested contract is the fleet document's `engine_contract`,
 * the attested engine is the live process (version and start time), and it is still the attestation
 * the Attestation resource accepted. Pure: the observer fetches.
 */
import { canonicalJson } from "../digest";
import { canonicalDigest, JsonNumberText, parseJsonKeepingNumbers } from "../attestation/canonical";
import { CONTRACT_FIELDS } from "../attestation/contract";

const PROCESS_START_TOLERANCE_S = 1e-6;
const REQUIRED = ["schema", "schema_version", "contract", "sources", "engine", "attestation_digest"];
const show = (v: unknown) => JSON.stringify(v ?? null);

export interface LiveIdentity {
  readonly version: string;
  readonly processStart: number;
}

export function attestationProblems(text: string, declared: Readonly<Record<string, unknown>>, live: LiveIdentity, recordedDigest?: string): { problems: string[]; attestationDigest: string | null; launchDigest: string | null } {
  let raw: Record<string, unknown>;
  try {
    const parsed = parseJsonKeepingNumbers(text);
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return { problems: ["response is not an object"], attestationDigest: null, launchDigest: null };
    raw = parsed as Record<string, unknown>;
  } catch (err) {
    return { problems: [`response is not JSON: ${(err as Error).message}`], attestationDigest: null, launchDigest: null };
  }
  const problems: string[] = [];
  const missing = REQUIRED.filter((k) => !(k in raw));
  if (missing.length) return { problems: [`missing response field(s): ${missing.join(", ")}`], attestationDigest: null, launchDigest: null };
  const reported = typeof raw.attestation_digest === "string" ? raw.attestation_digest : null;
  const { attestation_digest: _omit, ...covered } = raw;
  if (reported !== canonicalDigest(covered)) problems.push("attestation_digest does not match the response");
  const contract = (raw.contract && typeof raw.contract === "object" ? raw.contract : {}) as Record<string, unknown>;
  for (const f of CONTRACT_FIELDS) {
    const seen = contract[f] instanceof JsonNumberText ? Number((contract[f]).text) : contract[f];
    if (canonicalJson(seen ?? null) !== canonicalJson(declared[f] ?? null)) problems.push(`contract.${f} is ${show(seen)}, expected ${show(declared[f])}`);
  }
  const engine = (raw.engine && typeof raw.engine === "object" ? raw.engine : {}) as Record<string, unknown>;
  if (engine.version !== live.version) problems.push(`engine version is ${show(engine.version)}, the live engine reports ${show(live.version)}`);
  const start = engine.process_start_time_seconds instanceof JsonNumberText ? Number(engine.process_start_time_seconds.text) : engine.process_start_time_seconds;
  if (typeof start !== "number" || !Number.isFinite(start)) problems.push("engine process_start_time_seconds is not a number");
  else if (Math.abs(start - live.processStart) > PROCESS_START_TOLERANCE_S) problems.push(`engine process_start_time_seconds is ${start}, the live engine reports ${live.processStart}`);
  if (recordedDigest !== undefined && reported !== recordedDigest) problems.push(`attestation ${reported} is not the one accepted at deployment (${recordedDigest})`);
  const launchDigest = typeof raw.launch_digest === "string" ? raw.launch_digest : null;
  return { problems, attestationDigest: reported, launchDigest };
}
