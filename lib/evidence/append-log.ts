/**
 * Append-only logs beside the immutable records: `<kind>/logs/<name>` under the store root, one line
 * per entry. A log is never truncated or replaced, only grown: the runbook's image-check.log keeps every
 * inspection, failed ones included. Same rules as the store: 0600 files in 0700 folders, no symbolic
 * link followed, no registered secret written. Each record that appends says where its line starts and
 * the line's digest, so a log edited later is detectable against the records.
 */
import { createHash } from "node:crypto";
import { EvidenceError } from "./errors";
import { checkKind } from "./paths";
import { SecretRegistry } from "./secrets";
import type { EvidenceBackend } from "./backends/backend";
import { FolderBackend } from "./backends/folder";

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
 * Appends one line (a newline is added when missing) to `<kind>/logs/<name>` of a store (a folder, as its
 * root, or a backend). Throws
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
  const backend = typeof where === "string" ? new FolderBackend(where, options.owner ?? process.getuid?.()) : where;
  return { relativePath, offset: await backend.append(relativePath, bytes), bytes: bytes.byteLength, sha256 };
}
