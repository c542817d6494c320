/** The one error the evidence store throws; `code` says which rule was broken. */

/**
 * - `NARWHAL_EVIDENCE_INVALID`: stored evidence can no longer be trusted: its bytes do not match the
 *   recorded digest, it is gone, or a symbolic link stands on its path. Pulumi treats it as not measured.
 * - `NARWHAL_EVIDENCE_RECORD`: a record handed to `write` does not have the record shape.
 * - `NARWHAL_EVIDENCE_SECRET`: a record or artifact contains a registered secret; nothing was written.
 * - `NARWHAL_EVIDENCE_SYMLINK`: a write met a symbolic link under the store root and did not follow it.
 * - `NARWHAL_EVIDENCE_CONFLICT`: a different file already holds a record's or artifact's digest name.
 * - `NARWHAL_EVIDENCE_PATH`: a path is not one the store writes, or a folder on it is not a folder.
 * - `NARWHAL_EVIDENCE_EXPORT`: a sanitised export could not alias its inputs without losing data.
 * - `NARWHAL_EVIDENCE_UNWRITABLE`: the file system refused a write (read-only, no permission, full, a
 *   file where a folder should be), or an S3 store refused it (403); nothing was recorded.
 * - `NARWHAL_EVIDENCE_LOCATION`: `evidence.store` is not a store location, or its bucket does not exist.
 * - `NARWHAL_EVIDENCE_CREDENTIALS`: an S3 store's credentials are missing from the environment or refused.
 * - `NARWHAL_EVIDENCE_UNREACHABLE`: an S3 store did not answer within its bound; nothing was judged.
 * - `NARWHAL_EVIDENCE_REFUSED`: an S3 store answered a request with an error not listed above.
 */
export type EvidenceErrorCode =
  | "NARWHAL_EVIDENCE_INVALID"
  | "NARWHAL_EVIDENCE_RECORD"
  | "NARWHAL_EVIDENCE_SECRET"
  | "NARWHAL_EVIDENCE_SYMLINK"
  | "NARWHAL_EVIDENCE_CONFLICT"
  | "NARWHAL_EVIDENCE_PATH"
  | "NARWHAL_EVIDENCE_EXPORT"
  | "NARWHAL_EVIDENCE_UNWRITABLE"
  | "NARWHAL_EVIDENCE_LOCATION"
  | "NARWHAL_EVIDENCE_CREDENTIALS"
  | "NARWHAL_EVIDENCE_UNREACHABLE"
  | "NARWHAL_EVIDENCE_REFUSED";

/**
 * Thrown by the evidence store and export. Callers and tests match on `code`, not `instanceof`: each
 * serialized dynamic provider carries its own copy of lib/. Messages name paths and JSON paths, never a
 * secret value.
 */
export class EvidenceError extends Error {
  constructor(
    readonly code: EvidenceErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "EvidenceError";
  }
}
