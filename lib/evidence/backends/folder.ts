/**
 * The evidence store in a local folder (`runs/<stack>/evidence`, the default): files 0600 in folders
 * 0700, each written through a temporary file and hard-linked to its name (safe-fs.ts), no symbolic link
 * ever followed, a folder that refuses writes named as that folder.
 */
import { createHash } from "node:crypto";
import { constants as C, promises as fsp } from "node:fs";
import * as path from "node:path";
import { EvidenceError } from "../errors";
import { checkKind, recordFileHex, type StoredPath } from "../paths";
import { KIND_PATTERN } from "../record";
import { createExclusive, ensureFolders, entryAt, FILE_MODE, firstBadFolder, readNoFollow, refuseFolder, type Entry } from "../safe-fs";
import { unwritableStoreError } from "../unwritable";
import type { EvidenceBackend, ListedRecord, Loaded } from "./backend";

const sha256Hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Words for what stands where a file or folder was expected. */
const FOUND: Record<Entry, string> = {
  missing: "nothing",
  file: "a regular file",
  symlink: "a symbolic link (not followed)",
  folder: "a folder",
  other: "something that is not a regular file",
};

export class FolderBackend implements EvidenceBackend {
  readonly name: string;

  /** @param owner the user whose pre-existing folders may be brought to 0700; another user's are left as they are */
  constructor(
    root: string,
    private readonly owner: number | undefined,
  ) {
    this.name = path.resolve(root);
  }

  where(relativePath: string): string {
    return path.join(this.name, relativePath);
  }

  async create(stored: StoredPath, bytes: Uint8Array): Promise<void> {
    const fileName = path.basename(stored.relativePath);
    let folder: string;
    try {
      folder = await ensureFolders(this.name, stored.folders, this.owner);
      if ((await createExclusive(folder, fileName, bytes)) === "created") return;
    } catch (error) {
      // A read-only or full store fails the write (so the measurement is not recorded as done) in one line,
      // naming the folder inside the store that refused when the store's root itself still takes writes.
      throw unwritableStoreError(this.name, error, await this.refusingFolder(error)) ?? error;
    }
    const file = path.join(folder, fileName);
    const existing = await readNoFollow(file);
    if (!existing.ok) {
      const code = existing.entry === "symlink" ? "NARWHAL_EVIDENCE_SYMLINK" : "NARWHAL_EVIDENCE_CONFLICT";
      throw new EvidenceError(code, `evidence file ${file} is ${FOUND[existing.entry]}; the store does not follow or replace it. Remove it and write again`);
    }
    if (!existing.bytes.equals(bytes)) {
      throw new EvidenceError(
        "NARWHAL_EVIDENCE_CONFLICT",
        `evidence file ${file} already exists with other bytes (sha256:${sha256Hex(existing.bytes)}); it was not replaced. ` +
          "A file named by its digest differs only when it was altered after it was written: keep it for inspection elsewhere and remove it",
      );
    }
  }

  /**
   * The folder below the root (`preflight/`, `preflight/artifacts/`) whose write failed with `error`, or
   * undefined when the root refuses too (a read-only file system, a full disk): then the store is named.
   */
  private async refusingFolder(error: unknown): Promise<string | undefined> {
    const failed = (error as NodeJS.ErrnoException | undefined)?.path;
    if (typeof failed !== "string") return undefined;
    // A folder's own change (its mode brought to 0700) fails on the folder; a new file or folder, in its parent.
    const own = await entryAt(failed).catch(() => undefined);
    const folder = path.relative(this.name, own === "folder" ? failed : path.dirname(failed));
    if (!folder || folder.startsWith("..") || path.isAbsolute(folder)) return undefined;
    const rootRefuses = await fsp.access(this.name, C.W_OK).then(() => false, () => true);
    return rootRefuses ? undefined : `${folder.split(path.sep).join("/")}/`;
  }

  async load(stored: StoredPath): Promise<Loaded> {
    const bad = await firstBadFolder(this.name, stored.folders);
    if (bad) return { ok: false, found: `${FOUND[bad.entry]} at ${bad.path}` };
    const read = await readNoFollow(path.join(this.name, stored.relativePath));
    return read.ok ? read : { ok: false, found: FOUND[read.entry] };
  }

  /** A symbolic link in place of the root or a kind folder is refused, not followed. */
  async list(kind?: string): Promise<ListedRecord[]> {
    if (kind !== undefined) checkKind(kind);
    const rootEntry = await entryAt(this.name);
    if (rootEntry === "missing") return [];
    if (rootEntry !== "folder") refuseFolder(this.name, rootEntry);
    const kinds = kind !== undefined ? [kind] : (await fsp.readdir(this.name)).filter((k) => KIND_PATTERN.test(k));
    const out: ListedRecord[] = [];
    for (const k of kinds) {
      const folder = path.join(this.name, k);
      const entry = await entryAt(folder);
      if (entry === "missing") continue;
      if (entry !== "folder") refuseFolder(folder, entry);
      for (const dirent of await fsp.readdir(folder, { withFileTypes: true })) {
        const hex = dirent.isFile() ? recordFileHex(dirent.name) : undefined;
        if (hex) out.push({ kind: k, digest: `sha256:${hex}`, relativePath: `${k}/${dirent.name}` });
      }
    }
    return out;
  }

  /** Through an O_APPEND handle that does not follow a link, in one fsync-ed write. */
  async append(relativePath: string, bytes: Uint8Array): Promise<number> {
    const parts = relativePath.split("/");
    try {
      return await this.appendNow(await ensureFolders(this.name, parts.slice(0, -1), this.owner), parts[parts.length - 1], bytes);
    } catch (error) {
      // A read-only or full store refuses in one line, as a record's write does.
      throw unwritableStoreError(this.name, error) ?? error;
    }
  }

  private async appendNow(folder: string, name: string, bytes: Uint8Array): Promise<number> {
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
      return offset;
    } finally {
      await handle.close();
    }
  }
}
