/**
 * Which document an adopted runbook engine's sidecar serves. The runbook's sidecar served the launch
 * directory's `engine-attestation.json` (narwhal's `attestation_contract generate`), and everything the
 * runbook measured after it (profile rows, calibrations) binds that sidecar's `attestation_digest`.
 * narwhal-attest computes the digest from the document and the live engine identity only, so the
 * program's own sidecar, serving the same document for the same process, answers the same digest and
 * that evidence stays valid. The runbook's document is kept only while it is true of the live engine:
 * the same process the runbook attested, and a contract equal, field by field, to the one the program
 * derives from its own measurements. Otherwise the program serves its own document, and says why.
 */
import { canonicalJson } from "../digest";
import { canonicalDigest, parseJsonKeepingNumbers, plainJson } from "./canonical";
import { CONTRACT_FIELDS, contractProblems } from "./contract";
import { ATTESTATION_SCHEMA, ATTESTATION_SCHEMA_VERSION, documentDigest, type AttestationDocument, type ServedDocument } from "./document";

/** The runbook launch directory's document, as the engine's survey read it when the engine was adopted. */
export interface RunbookAttestationSource {
  /** The launch directory (`engines[].runbookRun`). */
  readonly run: string;
  /** The exact text of `engine-attestation.json`. */
  readonly text: string;
  /** When the process the runbook launched started (seconds since the epoch, from /proc). */
  readonly processStartS: number;
}

export type ChosenDocument =
  | { readonly source: "program"; readonly document: AttestationDocument; readonly text: string; readonly digest: string; readonly reason?: string }
  | { readonly source: "runbook"; readonly document: ServedDocument; readonly text: string; readonly digest: string; readonly run: string; readonly reason: string };

/** How far the live generation's start may sit from the runbook process's /proc start and still be it. */
export const SAME_PROCESS_TOLERANCE_S = 5;

const show = (v: unknown) => JSON.stringify(v ?? null);

/** Why the runbook's document cannot be served for this generation, or undefined when it can. */
function refusal(runbook: RunbookAttestationSource, served: unknown, program: AttestationDocument, liveStartS: number): string | undefined {
  if (Math.abs(liveStartS - runbook.processStartS) > SAME_PROCESS_TOLERANCE_S) {
    return `the engine process started at ${liveStartS}, after the runbook's (${runbook.processStartS}): restarted since the runbook attested it`;
  }
  if (!served || typeof served !== "object" || Array.isArray(served)) return "it is not a JSON object";
  const doc = served as Record<string, unknown>;
  if (doc.schema !== ATTESTATION_SCHEMA || doc.schema_version !== ATTESTATION_SCHEMA_VERSION) {
    return `it is ${show(doc.schema)} version ${show(doc.schema_version)}, not ${ATTESTATION_SCHEMA} version ${ATTESTATION_SCHEMA_VERSION}`;
  }
  const problems = contractProblems(doc.contract);
  if (problems.length) return `its contract does not load: ${problems.join("; ")}`;
  const contract = doc.contract as Record<string, unknown>;
  const differing = CONTRACT_FIELDS.filter((f) => canonicalJson(contract[f] ?? null) !== canonicalJson(program.contract[f]));
  if (differing.length) {
    return `its contract differs from the one the program measured: ${differing.map((f) => `contract.${f} is ${show(contract[f])} there, ${show(program.contract[f])} here`).join("; ")}`;
  }
  if (!doc.sources || typeof doc.sources !== "object") return "it has no sources";
  return undefined;
}

/**
 * The document the engine's sidecar serves: the runbook's when `runbook` is given (the engine is the
 * runbook launcher's, adopted) and it is still true of the live generation, else the program's.
 */
export function chooseDocument(program: AttestationDocument, runbook: RunbookAttestationSource | undefined, liveStartS: number): ChosenDocument {
  const own = (reason?: string): ChosenDocument => ({ source: "program", document: program, text: JSON.stringify(program), digest: documentDigest(program), ...(reason ? { reason } : {}) });
  if (!runbook) return own();
  const file = `${runbook.run}/engine-attestation.json`;
  let parsed: unknown;
  try {
    parsed = parseJsonKeepingNumbers(runbook.text);
  } catch (err) {
    return own(`the runbook's ${file} is ${(err as Error).message}; the program serves its own document`);
  }
  const why = refusal(runbook, plainJson(parsed), program, liveStartS);
  if (why) return own(`the runbook's ${file} is not served: ${why}; the program serves its own document`);
  return {
    source: "runbook",
    document: plainJson(parsed) as ServedDocument,
    text: runbook.text,
    // The digest of the exact text, numbers as written: what the sidecar will answer as its document.
    digest: canonicalDigest(parsed),
    run: runbook.run,
    reason: `serves the runbook's ${file}: the same engine process, and its contract equals the one the program measured`,
  };
}
