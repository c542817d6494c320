import { keptAside, pendingRoot } from "./pending";
import { evidenceRecord, type EvidenceArtifact, type EvidenceRecordFields } from "./record";
import { sourceRevision } from "./revision";
import { EvidenceStore } from "./store";
import { stackEvidenceStore } from "./stack-store";

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
 * Opens the store every evidence provider writes to: the stack's `evidence.store`, by default
 * `runs/<stack>/evidence` of this project (provider processes run in the program directory); secrets
 * given here are refused in what is written.
 */
export function providerEvidence(stack: string, secrets: ReadonlyArray<string | undefined> = []): ProviderEvidence {
  const root = process.cwd();
  const store = stackEvidenceStore(stack, { secrets: secrets.filter((s): s is string => !!s) });
  // A write the store refuses goes, within a create (pending.ts), to the same place in the store
  // kept aside, whose content addressing gives it the same path and digest; the create then fails saying so.
  const aside = (): EvidenceStore => new EvidenceStore(pendingRoot(root, stack), { secrets: secrets.filter((s): s is string => !!s) });
  const orAside = async <T>(write: (into: EvidenceStore) => Promise<T>, pathOf: (written: T) => string): Promise<T> => {
    try {
      return await write(store);
    } catch (error) {
      const kept = keptAside(stack);
      if ((error as { code?: string }).code !== "NARWHAL_EVIDENCE_UNWRITABLE" || !kept) throw error;
      let written: T;
      try {
        written = await write(aside());
      } catch {
        throw error; // nowhere to keep it either: the store's own refusal is the one to act on
      }
      kept.files.push(pathOf(written));
      kept.refusal ??= error as Error;
      return written;
    }
  };
  return {
    artifact: (kind, name, contents) => orAside((into) => into.writeArtifact(kind, name, contents), (a) => a.relativePath),
    async record(fields) {
      // Records hold JSON values only: absent optional fields are dropped rather than written as undefined.
      const plain = JSON.parse(JSON.stringify(fields)) as typeof fields;
      const record = evidenceRecord({ ...plain, stack, sourceRevision: sourceRevision(root) });
      const written = await orAside((into) => into.write(record), (w) => w.relativePath);
      return { relativePath: written.relativePath, digest: written.digest };
    },
  };
}

const isRef = (v: unknown): v is EvidenceRef =>
  typeof v === "object" && v !== null && typeof (v as EvidenceRef).relativePath === "string" && typeof (v as EvidenceRef).digest === "string";

/** The records this resource wrote (`evidence`, or `record` for the generated config) that fail their digest. */
export async function alteredEvidence(props: Record<string, unknown>): Promise<string[]> {
  const stack = props.stack;
  const refs = [props.evidence, props.record].filter(isRef);
  if (typeof stack !== "string" || refs.length === 0) return [];
  const store = stackEvidenceStore(stack);
  const altered: string[] = [];
  for (const ref of refs) if (!(await store.verify(ref.relativePath, ref.digest)).valid) altered.push(ref.relativePath);
  return altered;
}
