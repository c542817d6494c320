/**
 * The one way provider code and the npm scripts open a stack's evidence store, wherever it lives.
 *
 * The stack's `evidence.store` reaches a provider call as the `__evidenceStore` prop every dynamic
 * resource carries when the store is not the default folder (lib/shim-props.ts); the provider shim
 * (dynamic-providers/shim-host.ts) runs each call within {@link withEvidenceLocation}, so providers say
 * only which stack they write for.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { EvidenceBackend } from "./backends/backend";
import { S3Backend } from "./backends/s3";
import { DEFAULT_LOCATION, parseEvidenceLocation, type EvidenceLocation } from "./location";
import { EvidenceStore, evidenceRoot, type EvidenceStoreOptions } from "./store";

const current = new AsyncLocalStorage<EvidenceLocation>();

/** Runs `call` with `location` (an `evidence.store` value; undefined for the folder) as the store's. */
export function withEvidenceLocation<T>(location: string | undefined, call: () => T): T {
  return current.run(parseEvidenceLocation(location), call);
}

/** Where the store of `stack` is: the folder of this project (a path) or an S3 backend. */
export function evidenceBackend(stack: string, location: EvidenceLocation = current.getStore() ?? DEFAULT_LOCATION, projectRoot = process.cwd()): string | EvidenceBackend {
  return location.type === "s3" ? new S3Backend(location, stack) : evidenceRoot(projectRoot, stack);
}

/** The evidence store of `stack`, where its config puts it. */
export function stackEvidenceStore(stack: string, options: EvidenceStoreOptions = {}, location?: EvidenceLocation, projectRoot?: string): EvidenceStore {
  return new EvidenceStore(evidenceBackend(stack, location, projectRoot), options);
}
