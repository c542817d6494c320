/**
 * File operations that never follow a symbolic link under the store root and never replace a file.
 * Node has no openat(), so each folder is checked with lstat before use and each file is opened with
 * O_NOFOLLOW; the folders are 0700 and ours, so only our own user could race a check.
 */
import { randomBytes } from "node:crypto";
import { constants as C, promises as fsp } from "node:fs";
import * as path from "node:path";
import { EvidenceError } from "./errors";

/** Mode of every folder the store owns. */
export const FOLDER_MODE = 0o700;
/** Mode of every file the store writes. */
export const FILE_MODE = 0o600;

/** What stands at a path, without following a link. */
export type Entry = "missing" | "symlink" | "folder" | "file" | "other";

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** Classifies a path with lstat: a symbolic link is reported as one, never as what it points to. */
export async function entryAt(p: string): Promise<Entry> {
  try {
    const st = await fsp.lstat(p);
    return st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "folder" : st.isFile() ? "file" : "other";
  } catch (error) {
    if (errno(error) === "ENOENT") return "missing";
    throw error;
  }
}

/** Throws the store's error for a path that should be a real folder but is not. */
export function refuseFolder(p: string, entry: Entry): never {
  if (entry === "symlink") {
    throw new EvidenceError("NARWHAL_EVIDENCE_SYMLINK", `evidence folder ${p} is a symbolic link; the store does not follow links, remove it or choose another root`);
  }
  throw new EvidenceError("NARWHAL_EVIDENCE_PATH", `evidence folder ${p} is ${entry === "file" ? "a regular file" : "not a folder"}; the store needs a folder there`);
}

/**
 * Makes `dir` a real 0700 folder. A folder made here gets 0700 whatever the umask; a pre-existing one is
 * brought to 0700 only when `owner` owns it (another user's folder is not ours to change). The mode is
 * fixed through a handle opened with O_NOFOLLOW, so a link swapped in after the lstat is never chmod-ed.
 */
async function ensureFolder(dir: string, owner: number | undefined): Promise<void> {
  let entry = await entryAt(dir);
  let made = false;
  if (entry === "missing") {
    try {
      await fsp.mkdir(dir, { mode: FOLDER_MODE });
      made = true;
    } catch (error) {
      if (errno(error) !== "EEXIST") throw error; // a concurrent write made it first
    }
    entry = await entryAt(dir);
  }
  if (entry !== "folder") refuseFolder(dir, entry);
  const handle = await fsp.open(dir, C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW);
  try {
    const st = await handle.stat();
    if ((st.mode & 0o777) !== FOLDER_MODE && (made || owner === undefined || st.uid === owner)) await handle.chmod(FOLDER_MODE);
  } catch (error) {
    // A change through a handle names no path: name the folder, so a refusal can say which one refused.
    if (error && typeof error === "object" && !("path" in error)) Object.assign(error, { path: dir });
    throw error;
  } finally {
    await handle.close();
  }
}

/**
 * Makes the root and then each of `folders` below it real 0700 folders, and returns the innermost.
 * Missing ancestors of the root (`runs/`, `runs/<stack>/`) are created 0700 too; existing ancestors are
 * outside the store and left as they are.
 */
export async function ensureFolders(root: string, folders: readonly string[], owner: number | undefined): Promise<string> {
  const missing: string[] = [];
  for (let dir = path.dirname(root); (await entryAt(dir)) === "missing"; dir = path.dirname(dir)) missing.unshift(dir);
  for (const dir of missing) {
    try {
      await fsp.mkdir(dir, { mode: FOLDER_MODE });
    } catch (error) {
      if (errno(error) !== "EEXIST") throw error;
    }
  }
  let dir = root;
  await ensureFolder(dir, owner);
  for (const folder of folders) {
    dir = path.join(dir, folder);
    await ensureFolder(dir, owner);
  }
  return dir;
}

/** The first of root and `folders` below it that is not a real folder, for readers; undefined when all are. */
export async function firstBadFolder(root: string, folders: readonly string[]): Promise<{ path: string; entry: Entry } | undefined> {
  let dir = root;
  for (const next of ["", ...folders]) {
    dir = next ? path.join(dir, next) : dir;
    const entry = await entryAt(dir);
    if (entry !== "folder") return { path: dir, entry };
  }
  return undefined;
}

/**
 * Creates `folder/name` holding exactly `bytes`, or reports that something already stands there. The
 * bytes go to a temporary file first (O_EXCL|O_NOFOLLOW, 0600, fsync-ed), which is then hard-linked to
 * its name: link() never replaces an existing entry, not even a symbolic link, and a crash leaves at
 * worst a stray `.tmp-*` file, never a half-written record under a digest name.
 */
export async function createExclusive(folder: string, name: string, bytes: Uint8Array): Promise<"created" | "exists"> {
  const temp = path.join(folder, `.tmp-${process.pid}-${randomBytes(8).toString("hex")}`);
  const handle = await fsp.open(temp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, FILE_MODE);
  try {
    try {
      await handle.chmod(FILE_MODE); // the umask may have narrowed or widened the create mode
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await fsp.link(temp, path.join(folder, name));
    } catch (error) {
      if (errno(error) === "EEXIST") return "exists";
      throw error;
    }
  } finally {
    await fsp.unlink(temp).catch(() => undefined);
  }
  await syncFolder(folder);
  return "created";
}

/** fsync a folder so a new name in it survives a crash. */
async function syncFolder(folder: string): Promise<void> {
  const handle = await fsp.open(folder, C.O_RDONLY | C.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A file's bytes, or why there are none to trust. */
export type ReadResult = { ok: true; bytes: Buffer } | { ok: false; entry: Exclude<Entry, "file"> };

/** Reads a regular file without following a link at its name (O_NOFOLLOW, then fstat on the handle). */
export async function readNoFollow(file: string): Promise<ReadResult> {
  let handle: fsp.FileHandle;
  try {
    // O_NONBLOCK: a FIFO planted at the name must not hang the reader; regular files ignore the flag.
    handle = await fsp.open(file, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (error) {
    if (errno(error) === "ENOENT") return { ok: false, entry: "missing" };
    if (errno(error) === "ELOOP") return { ok: false, entry: "symlink" };
    throw error;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) return { ok: false, entry: st.isDirectory() ? "folder" : "other" };
    return { ok: true, bytes: await handle.readFile() };
  } finally {
    await handle.close();
  }
}
