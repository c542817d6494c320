/**
 * The store's path grammar. Pulumi state keeps these relative paths, so they are plain POSIX strings
 * with no `..`, no leading `/` and nothing the store would not have written itself.
 */
import { EvidenceError } from "./errors";
import { KIND_PATTERN } from "./record";

/** A stored file: a record (`<kind>/<hex>.json`) or an artifact (`<kind>/artifacts/<hex>`). */
export interface StoredPath {
  readonly type: "record" | "artifact";
  readonly kind: string;
  /** The SHA-256 the file is named by, 64 lowercase hex digits. */
  readonly hex: string;
  /** Folders from the store root down to the file's folder: `[kind]` or `[kind, "artifacts"]`. */
  readonly folders: readonly string[];
  readonly relativePath: string;
}

/** Name of the folder, inside a kind's folder, that holds its artifacts. */
export const ARTIFACTS_FOLDER = "artifacts";

const RECORD_FILE = /^([0-9a-f]{64})\.json$/;
const STORED = /^([a-z][a-z0-9-]{0,62})\/(?:([0-9a-f]{64})\.json|artifacts\/([0-9a-f]{64}))$/;

/** Throws `NARWHAL_EVIDENCE_PATH` unless `kind` can be a folder name under the root. */
export function checkKind(kind: string): void {
  if (!KIND_PATTERN.test(kind)) {
    throw new EvidenceError(
      "NARWHAL_EVIDENCE_PATH",
      `evidence kind ${JSON.stringify(kind)} is not allowed: expected lowercase letters, digits and "-", starting with a letter`,
    );
  }
}

/** Where the record with this digest lives. */
export function recordPath(kind: string, hex: string): StoredPath {
  checkKind(kind);
  return { type: "record", kind, hex, folders: [kind], relativePath: `${kind}/${hex}.json` };
}

/** Where the artifact with this digest lives. */
export function artifactPath(kind: string, hex: string): StoredPath {
  checkKind(kind);
  return { type: "artifact", kind, hex, folders: [kind, ARTIFACTS_FOLDER], relativePath: `${kind}/${ARTIFACTS_FOLDER}/${hex}` };
}

/** Parses a relative path from Pulumi state; undefined when it is not one the store writes. */
export function parseStoredPath(relativePath: string): StoredPath | undefined {
  const m = STORED.exec(relativePath);
  if (!m) return undefined;
  return m[2] !== undefined ? recordPath(m[1], m[2]) : artifactPath(m[1], m[3]);
}

/** The digest hex of a record file name (`<hex>.json`), or undefined for anything else (temp files...). */
export function recordFileHex(fileName: string): string | undefined {
  return RECORD_FILE.exec(fileName)?.[1];
}

