/**
 * Writes a failed step's evidence (lib/evidence/failed-attempt.ts shapes it) before the error reaches the
 * user. The error keeps its class and code; its message gains the record's path.
 */
import type { EvidenceArtifact } from "../lib/evidence/record";
import { failureRecord, listedAttempt, type Attempt, type FailedStep, type ListedAttempt } from "../lib/evidence/failed-attempt";
import type { KeptAttempt } from "../lib/runtime/attempts";
import { providerEvidence, type EvidenceRef, type ProviderEvidence } from "../lib/evidence/provider-evidence";

export * from "../lib/evidence/failed-attempt";

/**
 * Records the failed attempt, then rethrows `err` naming the record. A store that refuses the record (a
 * secret in a capture, an unwritable disk) does not hide the step's own error: both are said.
 */
export async function keepFailedAttempt(err: unknown, step: FailedStep, attempt: Attempt): Promise<never> {
  const error = err instanceof Error ? err : new Error(String(err));
  if (!step.stack) throw error;
  let kept: EvidenceRef;
  try {
    const evidence = providerEvidence(step.stack, step.secrets);
    const artifacts: EvidenceArtifact[] = [];
    for (const c of attempt.captures) artifacts.push(await evidence.artifact(step.kind, c.name, c.text));
    kept = await evidence.record(failureRecord(error, step, attempt, artifacts));
  } catch (storeErr) {
    error.message = `${error.message}\nthe failed attempt could not be recorded: ${(storeErr as Error).message}`;
    throw error;
  }
  error.message = `${error.message}\nthe failed attempt is kept as ${kept.relativePath}`;
  throw error;
}

/**
 * The failed attempts kept on a host (lib/runtime/attempts.ts), as the next successful record of that step
 * carries them: each log tail an artifact named `<step>/attempts/<id>/<log>`, each attempt an entry.
 */
export async function listedAttempts(
  evidence: ProviderEvidence,
  kind: string,
  step: string,
  logName: string,
  kept: ReadonlyArray<KeptAttempt>,
): Promise<{ artifacts: EvidenceArtifact[]; failedAttempts: ListedAttempt[] }> {
  const artifacts: EvidenceArtifact[] = [];
  for (const a of kept) artifacts.push(await evidence.artifact(kind, `${step}/attempts/${a.id}/${logName}`, a.logTail));
  return { artifacts, failedAttempts: kept.map((a, i) => listedAttempt(a, artifacts[i].relativePath)) };
}
