/**
 * Append-only logs beside the immutable records: `<kind>/logs/<name>` under the store root, one line
 * per entry. A log is never truncated or replaced, only grown: the runbook's image-check.log keeps every
 * inspection, failed ones included. Same rules as the store: 0600 files in 0700 folders, no symbolic
 * link followed, no registered secret written. Each record that appends says where its line starts and
 * the line's digest, so a log edited later is detectable against the records.
 */
import { createHash } from "node:crypto";
import { constants as C, promises as fsp } from "node:fs";
import * as path from "node:path";
import { EvidenceError } from "./errors";
import { checkKind } from "./paths";
import { ensureFolders, FILE_MODE } from "./safe-fs";
import { SecretRegistry } from "./secrets";
import { unwritableStoreError } from "./unwritable";
import type { EvidenceBackend } from "./backends/backend";

export const LOGS_FOLDER = "logs";
const LOG_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\.jsonl$/;

/** Where one appended line landed. */
export interface AppendedLine {
  /** `<kind>/logs/<name>`, relative to the store root. */
  readonly relativePath: string;
  /** Byte offset at which the line starts. */
  readonly offset: number;
  readonly bytes: number;
  /** `sha256:<hex>` of the line's bytes (newline included). */
  readonly sha256: string;
}

/**
 * Appends one line (a newline is added when missing) to `<root>/<kind>/logs/<name>`. Throws
 * `NARWHAL_EVIDENCE_SECRET` (nothing written) when the line holds a registered secret,
 * `NARWHAL_EVIDENCE_SYMLINK` or `NARWHAL_EVIDENCE_PATH` when something other than a regular file stands there.
 */
export async function appendLogLine(
  where: string | EvidenceBackend,
  kind: string,
  name: string,
  line: string,
  options: { secrets?: Iterable<string | undefined>; owner?: number } = {},
): Promise<AppendedLine> {
  checkKind(kind);
  if (!LOG_NAME.test(name)) throw new EvidenceError("NARWHAL_EVIDENCE_PATH", `log name ${JSON.stringify(name)} is not allowed: expected letters, digits, "._-" and a .jsonl ending`);
  const bytes = Buffer.from(line.endsWith("\n") ? line : `${line}\n`, "utf8");
  const hit = new SecretRegistry(options.secrets).findInBytes(bytes);
  if (hit) throw new EvidenceError("NARWHAL_EVIDENCE_SECRET", `${kind} log ${name} refused a line: a registered secret (${hit.encoding}) starts at byte ${hit.offset}; nothing was written`);

  const relativePath = `${kind}/${LOGS_FOLDER}/${name}`;
  const sha256 = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
  if (typeof where !== "string") {
    if (!where.append) throw new EvidenceError("NARWHAL_EVIDENCE_PATH", `evidence store ${where.name} keeps no logs`);
    return { relativePath, offset: await where.append(relativePath, bytes), bytes: bytes.byteLength, sha256 };
  }
  try {
    return await appendNow(path.resolve(where), kind, name, bytes, options.owner);
  } catch (error) {
    // A read-only or full store refuses in one line, as the record store does.
    throw unwritableStoreError(path.resolve(where), error) ?? error;
  }
}

/** The append itself: folders, an O_APPEND handle that does not follow a link, one fsync-ed write. */
async function appendNow(root: string, kind: string, name: string, bytes: Buffer, owner: number | undefined): Promise<AppendedLine> {
  const folder = await ensureFolders(root, [kind, LOGS_FOLDER], owner ?? process.getuid?.());
  const file = path.join(folder, name);
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, C.O_WRONLY | C.O_APPEND | C.O_CREAT | C.O_NOFOLLOW | C.O_NONBLOCK, FILE_MODE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOOP") {
      throw new EvidenceError("NARWHAL_EVIDENCE_SYMLINK", `evidence log ${file} is a symbolic link; the store does not follow it. Remove it and run again`);
    }
    throw error;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new EvidenceError("NARWHAL_EVIDENCE_PATH", `evidence log ${file} is not a regular file; the store needs one there`);
    if ((st.mode & 0o777) !== FILE_MODE) await handle.chmod(FILE_MODE);
    const offset = st.size;
    await handle.write(bytes);
    await handle.sync();
    return { relativePath: `${kind}/${LOGS_FOLDER}/${name}`, offset, bytes: bytes.byteLength, sha256: `sha256:${createHash("sha256").update(bytes).digest("hex")}` };
  } finally {
    await handle.close();
  }
}
