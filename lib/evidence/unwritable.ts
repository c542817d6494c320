/**
 * The one-line refusal of a store the file system will not write to. The raw error names a `.tmp-*`
 * file the operator never asked for; this names the store, the cause in words and the fix.
 */
import { EvidenceError } from "./errors";

/** errno codes that mean "this store cannot be written here", with the words an operator acts on. */
const CAUSES: Record<string, string> = {
  EROFS: "the file system is read-only",
  EACCES: "permission denied",
  EPERM: "the operation is not permitted (an immutable or append-only attribute?)",
  ENOSPC: "no space left on the device",
  EDQUOT: "the disk quota is exhausted",
  ENOTDIR: "a file stands where a folder of the store should be",
  EMLINK: "the folder holds too many links",
};

/**
 * The store's error for `error`, or undefined when it is not a refusal to write (it is rethrown as it is).
 * `folder` names the folder inside the store that refused (`preflight/`) when the rest of the store takes writes.
 */
export function unwritableStoreError(root: string, error: unknown, folder?: string): EvidenceError | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const cause = code ? CAUSES[code] : undefined;
  if (!cause) return undefined;
  const where = folder ? `${root}/${folder}` : root;
  return new EvidenceError(
    "NARWHAL_EVIDENCE_UNWRITABLE",
    `evidence store ${root} refuses writes${folder ? ` in ${folder}` : ""}: ${cause} (${code}); nothing was recorded as measured. Make ${where} writable and run again`,
  );
}
