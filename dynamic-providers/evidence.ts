import { EvidenceStore, evidenceRecord, evidenceRoot, sourceRevision, EvidenceRecordFields } from "../lib/evidence";

/**
 * Writes one evidence record for a provider call. Provider processes run in the program directory,
 * so the store is `runs/<stack>/evidence` of this project; secrets given here are refused in the record.
 */
export async function writeEvidence(
  stack: string,
  secrets: ReadonlyArray<string | undefined>,
  fields: Omit<EvidenceRecordFields, "stack" | "sourceRevision">,
): Promise<{ relativePath: string; digest: string }> {
  const root = process.cwd();
  const store = new EvidenceStore(evidenceRoot(root, stack), { secrets: secrets.filter((s): s is string => !!s) });
  // Records hold JSON values only: absent optional fields are dropped rather than written as undefined.
  const plain = JSON.parse(JSON.stringify(fields)) as typeof fields;
  const written = await store.write(evidenceRecord({ ...plain, stack, sourceRevision: sourceRevision(root) }));
  return { relativePath: written.relativePath, digest: written.digest };
}
