/**
 * What the evidence store needs from the place its files live: create a file under a name that never
 * changes, read it back, list the records. The store itself (store.ts) checks secrets, schemas and
 * digests the same way for every backend: a local folder (folder.ts) or an S3 bucket (s3.ts).
 */
import type { StoredPath } from "../paths";

/** One record file found by `list`. Listing does not verify; `read` and `verify` do. */
export interface ListedRecord {
  readonly kind: string;
  readonly digest: string;
  readonly relativePath: string;
}

/** A stored file's bytes, or, in words, what stands at its name instead ("nothing", "a symbolic link ..."). */
export type Loaded = { readonly ok: true; readonly bytes: Buffer } | { readonly ok: false; readonly found: string };

export interface EvidenceBackend {
  /** The store as messages name it: a folder's absolute path, or `s3://bucket/prefix (endpoint)`. */
  readonly name: string;
  /** One stored file as messages name it. */
  where(relativePath: string): string;
  /**
   * Puts `bytes` under the stored path, never replacing anything: an identical file already there is
   * accepted, other bytes are `NARWHAL_EVIDENCE_CONFLICT`; a store that refuses writes is
   * `NARWHAL_EVIDENCE_UNWRITABLE`. No reader ever sees a partial file.
   */
  create(stored: StoredPath, bytes: Uint8Array): Promise<void>;
  load(stored: StoredPath): Promise<Loaded>;
  /** Record files (not artifacts, not temporary files) of one kind or of all, in any order. */
  list(kind?: string): Promise<ListedRecord[]>;
  /**
   * Appends `bytes` to the log at `relativePath` (`<kind>/logs/<name>`, append-log.ts), never truncating
   * it, and returns the offset the bytes start at. No reader sees part of a line.
   */
  append(relativePath: string, bytes: Uint8Array): Promise<number>;
}
