/**
 * What the Attestation resource checks in a sidecar's `/v1/attestation` answer: narwhal's own
 * `verify_attestation` (shape, schema, `launch_digest`, `attestation_digest`, contract against the
 * declared one, engine identity against the live one), and that it binds exactly what this program
 * measured: the document it wrote, hence the checked plan, the captured cache layout and the proved
 * generation. Pure: the provider fetches the text.
 */
import { canonicalJson } from "../digest";
import { canonicalDigest, JsonNumberText, parseJsonKeepingNumbers, plainJson } from "./canonical";
import { CONTRACT_FIELDS, contractProblems, type EngineContract } from "./contract";
import { ATTESTATION_SCHEMA, ATTESTATION_SCHEMA_VERSION, launchDigest, type ServedDocument } from "./document";

export interface AttestationExpectations {
  readonly document: ServedDocument;
  readonly documentDigest: string;
  /**
   * `program` (the default): the document's `launch` names the checked plan, the captured cache layout
   * and the proved generation, and each must be this engine's. `runbook`: an adopted runbook engine's
   * document, whose `launch` is the launcher's record; it binds the generation through the engine
   * identity alone, and its contract was found equal to the program's before it was served.
   */
  readonly launchBinding?: "program" | "runbook";
  /** The proved generation (EngineGeneration outputs). */
  readonly generation: { readonly generationDigest: string; readonly processStartTime: number; readonly version: string };
  readonly planSha256: string;
  readonly cacheLayoutDigest: string;
}

export interface SidecarAttestation {
  /** The answer with numbers as JS numbers. */
  readonly payload: Record<string, unknown>;
  /** `attestation_digest` as the sidecar reported it (checked against the payload unless a problem says otherwise). */
  readonly attestationDigest: string | null;
  readonly launchDigest: string | null;
  readonly contract: EngineContract | null;
  readonly engine: { readonly version: unknown; readonly processStartTime: unknown };
  /** Every way the answer fails the checks; empty when it binds what it must. */
  readonly problems: string[];
}

const REQUIRED = ["schema", "schema_version", "contract", "sources", "engine", "attestation_digest"];
const OPTIONAL = ["launch", "launch_digest"];
/** narwhal's `verify_attestation` compares process start times with this absolute tolerance. */
const PROCESS_START_TOLERANCE_S = 1e-6;

const show = (v: unknown) => JSON.stringify(v ?? null);

/** Checks one `/v1/attestation` body; never throws on a bad answer, it reports it. */
export function checkAttestation(text: string, expected: AttestationExpectations): SidecarAttestation {
  let raw: unknown;
  try {
    raw = parseJsonKeepingNumbers(text);
  } catch (err) {
    return { payload: {}, attestationDigest: null, launchDigest: null, contract: null, engine: { version: null, processStartTime: null }, problems: [`the answer is ${(err as Error).message}`] };
  }
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    return { payload: {}, attestationDigest: null, launchDigest: null, contract: null, engine: { version: null, processStartTime: null }, problems: ["the answer is not a JSON object"] };
  }
  const rawPayload = raw as Record<string, unknown>;
  const payload = plainJson(rawPayload) as Record<string, unknown>;
  const problems: string[] = [];
  const keys = Object.keys(payload);
  const unknown = keys.filter((k) => !REQUIRED.includes(k) && !OPTIONAL.includes(k)).sort();
  const missing = REQUIRED.filter((k) => !keys.includes(k));
  if (unknown.length) problems.push(`unknown response field(s): ${unknown.join(", ")}`);
  if (missing.length) problems.push(`missing response field(s): ${missing.join(", ")}`);
  if (("launch" in payload) !== ("launch_digest" in payload)) problems.push("launch and launch_digest must appear together");
  if (payload.schema !== ATTESTATION_SCHEMA) problems.push(`schema is ${show(payload.schema)}, expected ${show(ATTESTATION_SCHEMA)}`);
  if (payload.schema_version !== ATTESTATION_SCHEMA_VERSION) problems.push(`schema_version is ${show(payload.schema_version)}, expected ${ATTESTATION_SCHEMA_VERSION}`);

  const reported = typeof payload.attestation_digest === "string" ? payload.attestation_digest : null;
  const { attestation_digest: _omit, ...covered } = rawPayload;
  const recomputed = canonicalDigest(covered);
  if (reported !== recomputed) problems.push(`attestation_digest ${show(reported)} does not match the response (${recomputed})`);
  const reportedLaunch = typeof payload.launch_digest === "string" ? payload.launch_digest : null;
  if ("launch" in payload && reportedLaunch !== launchDigest(rawPayload.contract, rawPayload.launch)) {
    problems.push("launch_digest does not match the launch evidence");
  }

  const contractIssues = contractProblems(payload.contract);
  problems.push(...contractIssues);
  const contract = contractIssues.length === 0 ? (payload.contract as EngineContract) : null;
  const { document } = expected;
  if (payload.contract && typeof payload.contract === "object") {
    const served = payload.contract as Record<string, unknown>;
    for (const f of CONTRACT_FIELDS) {
      if (canonicalJson(served[f] ?? null) !== canonicalJson(document.contract[f])) {
        problems.push(`contract.${f} is ${show(served[f])}, the document has ${show(document.contract[f])}`);
      }
    }
  }
  if (canonicalJson(payload.sources ?? null) !== canonicalJson(document.sources)) problems.push("sources differ from the document's");

  const launch = (payload.launch ?? {}) as Record<string, unknown>;
  const bindings: Array<[string, unknown, string]> = [
    ["plan_sha256", launch.plan_sha256, expected.planSha256],
    ["cache_layout_sha256", launch.cache_layout_sha256, expected.cacheLayoutDigest],
    ["generation_sha256", launch.generation_sha256, expected.generation.generationDigest],
  ];
  if (expected.launchBinding !== "runbook") {
    for (const [name, seen, want] of bindings) {
      if (seen !== want) problems.push(`launch.${name} is ${show(seen)}, expected ${want}`);
    }
  }
  if (canonicalJson(payload.launch ?? null) !== canonicalJson(document.launch ?? null)) problems.push("launch differs from the document's");
  const served = { schema: rawPayload.schema, schema_version: rawPayload.schema_version, contract: rawPayload.contract, sources: rawPayload.sources, launch: rawPayload.launch };
  let servedDigest: string | null;
  try {
    servedDigest = canonicalDigest(served);
  } catch {
    servedDigest = null;
  }
  if (servedDigest !== expected.documentDigest) problems.push(`the sidecar serves document ${servedDigest ?? "(unreadable)"}, not ${expected.documentDigest}`);

  const engine = (rawPayload.engine && typeof rawPayload.engine === "object" ? rawPayload.engine : {}) as Record<string, unknown>;
  const version = engine.version;
  const start = engine.process_start_time_seconds instanceof JsonNumberText ? Number(engine.process_start_time_seconds.text) : engine.process_start_time_seconds;
  if (version !== expected.generation.version) problems.push(`engine version is ${show(version)}, the proved generation runs ${show(expected.generation.version)}`);
  if (typeof start !== "number" || !Number.isFinite(start)) problems.push("engine process_start_time_seconds is not a number");
  else if (Math.abs(start - expected.generation.processStartTime) > PROCESS_START_TOLERANCE_S) {
    problems.push(`engine process started at ${start}, the proved generation at ${expected.generation.processStartTime}`);
  }
  return { payload, attestationDigest: reported, launchDigest: reportedLaunch, contract, engine: { version, processStartTime: start }, problems };
}
