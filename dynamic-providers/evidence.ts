import { EvidenceStore, evidenceRecord, evidenceRoot, sourceRevision, type EvidenceArtifact, type EvidenceRecordFields } from "../lib/evidence";

/** Where a written record is, and the digest a refresh checks it against. */
export interface EvidenceRef {
  relativePath: string;
  digest: string;
}

/** The stack's evidence store as one provider call writes to it: its artifacts, then its record. */
export interface ProviderEvidence {
  artifact(kind: string, name: string, contents: Uint8Array | string): Promise<EvidenceArtifact>;
  record(fields: Omit<EvidenceRecordFields, "stack" | "sourceRevision">): Promise<EvidenceRef>;
}

/**
 * Opens the store every evidence provider writes to. Provider processes run in the program directory,
 * so it is `runs/<stack>/evidence` of this project; secrets given here are refused in what is written.
 */
export function providerEvidence(stack: string, secrets: ReadonlyArray<string | undefined> = []): ProviderEvidence {
  const root = process.cwd();
  const store = new EvidenceStore(evidenceRoot(root, stack), { secrets: secrets.filter((s): s is string => !!s) });
  return {
    artifact: (kind, name, contents) => store.writeArtifact(kind, name, contents),
    async record(fields) {
      // Records hold JSON values only: absent optional fields are dropped rather than written as undefined.
      const plain = JSON.parse(JSON.stringify(fields)) as typeof fields;
      const written = await store.write(evidenceRecord({ ...plain, stack, sourceRevision: sourceRevision(root) }));
      return { relativePath: written.relativePath, digest: written.digest };
    },
  };
}

