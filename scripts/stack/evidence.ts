/**
 * The evidence store of a stack as the scripts open it: where its config's `evidence.store` says, read
 * through the stack (so a clone that never ran `up` finds the store its team's stack uses), or the
 * project's `runs/<stack>/evidence` folder when the config names none.
 */
import { parseEvidenceLocation, type EvidenceLocation } from "../../lib/evidence/location";
import { stackEvidenceStore } from "../../lib/evidence/stack-store";
import type { EvidenceStore, EvidenceStoreOptions } from "../../lib/evidence/store";
import { PROJECT_ROOT } from "./select";
import type { Stack } from "@pulumi/pulumi/automation";

/** `evidence.store` of the stack's config, parsed; the folder when unset. */
export async function evidenceLocationOf(stack: Stack): Promise<EvidenceLocation> {
  const project = (await stack.workspace.projectSettings()).name;
  const written = (await stack.getAllConfig())[`${project}:evidence`]?.value;
  const store = written ? (JSON.parse(written) as { store?: string }).store : undefined;
  return parseEvidenceLocation(store);
}

export function openEvidence(stackName: string, location: EvidenceLocation, options: EvidenceStoreOptions = {}): EvidenceStore {
  return stackEvidenceStore(stackName, options, location, PROJECT_ROOT);
}
