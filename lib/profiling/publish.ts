/**
 * Writes the store and its sidecar where the router reads them: never through a symlink, never
 * half-written (each file goes to a fresh temporary name in the same folder, 0600, then is renamed
 * over the destination), the sidecar first so a store never names samples that are not there yet.
 * The file system is behind {@link FileTarget}: SFTP to the router host, or the local disk.
 */
import { randomBytes } from "node:crypto";
import { posix } from "node:path";
import { ProfileError } from "./errors";
import { samplesPath, sha256Hex } from "./store";

export type EntryKind = "missing" | "file" | "folder" | "symlink" | "other";

export interface FileTarget {
  /** Names the destination in messages (host alias, never a credential). */
  readonly label: string;
  /** What is at `path`, without following a symlink. */
  lstat(path: string): Promise<EntryKind>;
  /** Creates `dir` and missing parents with `mode`. */
  mkdirp(dir: string, mode: number): Promise<void>;
  /** Creates a new file (fails if anything is there) with `mode` and these bytes. */
  writeExclusive(path: string, bytes: Buffer, mode: number): Promise<void>;
  /** Renames `from` over `to` in one step. */
  rename(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
}

export const STORE_FILE_MODE = 0o600;
export const STORE_FOLDER_MODE = 0o700;

export interface Published {
  path: string;
  digest: string;
  samplesPath: string;
  samplesDigest: string;
}

async function refuseLinks(t: FileTarget, path: string): Promise<void> {
  // Every folder on the way, then the file itself: a link anywhere would send the write elsewhere.
  const parts = path.split("/").filter(Boolean);
  for (let i = 1; i <= parts.length; i++) {
    const p = "/" + parts.slice(0, i).join("/");
    const kind = await t.lstat(p);
    if (kind === "symlink") throw new ProfileError("NARWHAL_PROFILE_STORE", `refusing symlink output: ${p} on ${t.label} is a symbolic link; profile outputs are never written through one`);
    if (kind === "missing") return;
    if (i < parts.length && kind !== "folder") throw new ProfileError("NARWHAL_PROFILE_STORE", `${p} on ${t.label} is not a folder; cannot write ${path}`);
    if (i === parts.length && kind !== "file") throw new ProfileError("NARWHAL_PROFILE_STORE", `${p} on ${t.label} is a ${kind}, not a file; refusing to replace it`);
  }
}

async function replaceFile(t: FileTarget, path: string, bytes: Buffer): Promise<void> {
  const temp = posix.join(posix.dirname(path), `.${posix.basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  await t.writeExclusive(temp, bytes, STORE_FILE_MODE);
  try {
    await t.rename(temp, path);
  } catch (err) {
    await t.remove(temp).catch(() => undefined);
    throw err;
  }
}

/** Checks both destinations, then writes the sidecar and the store. */
export async function publishStore(t: FileTarget, storePath: string, storeBytes: Buffer, samplesBytes: Buffer): Promise<Published> {
  if (!posix.isAbsolute(storePath) || posix.normalize(storePath) !== storePath) {
    throw new ProfileError("NARWHAL_PROFILE_STORE", `the profile store path must be absolute and normalised, got ${JSON.stringify(storePath)}`);
  }
  const sidecar = samplesPath(storePath);
  if (sidecar === storePath) throw new ProfileError("NARWHAL_PROFILE_STORE", "profile store and sample sidecar must have distinct paths");
  await refuseLinks(t, storePath);
  await refuseLinks(t, sidecar);
  await t.mkdirp(posix.dirname(storePath), STORE_FOLDER_MODE);
  // The folder may have been created just now: check the path once more before writing into it.
  await refuseLinks(t, storePath);
  await replaceFile(t, sidecar, samplesBytes);
  await replaceFile(t, storePath, storeBytes);
  return { path: storePath, digest: `sha256:${sha256Hex(storeBytes)}`, samplesPath: sidecar, samplesDigest: `sha256:${sha256Hex(samplesBytes)}` };
}
