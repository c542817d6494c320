/**
 * The output rules of narwhal-profile's modes on this machine's disk: a live sweep refuses existing
 * outputs unless `--overwrite`, refits and merges always need fresh ones, and no mode writes through a
 * symlink. A fresh output is written to a temporary name and hard-linked into place, so it appears
 * whole and never replaces a file that appeared meanwhile; the sidecar goes first.
 */
import { randomBytes } from "node:crypto";
import { constants, promises as fs } from "node:fs";
import * as path from "node:path";
import { ProfileError } from "./errors";
import { STORE_FILE_MODE, STORE_FOLDER_MODE } from "./publish";
import { samplesPath } from "./store";

export type OutputMode = "live" | "live-overwrite" | "fresh";

async function kind(p: string): Promise<"missing" | "symlink" | "present"> {
  try {
    return (await fs.lstat(p)).isSymbolicLink() ? "symlink" : "present";
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "missing";
    throw err;
  }
}

/** Checks the store and its sidecar before anything is measured or read. */
export async function checkOutputs(storePath: string, mode: OutputMode): Promise<void> {
  const sidecar = samplesPath(storePath);
  if (sidecar === storePath) throw new ProfileError("NARWHAL_PROFILE_STORE", "profile store and sample sidecar must have distinct paths");
  for (const p of [storePath, sidecar]) {
    const k = await kind(p);
    if (k === "symlink") throw new ProfileError("NARWHAL_PROFILE_STORE", `refusing symlink output: ${p}`);
    if (k === "present" && mode === "fresh") throw new ProfileError("NARWHAL_PROFILE_STORE", `output exists: ${p}; choose a fresh profile path`);
    if (k === "present" && mode === "live") throw new ProfileError("NARWHAL_PROFILE_STORE", `output exists: ${p}; use a new path or --overwrite`);
  }
}

async function linkFresh(dest: string, bytes: Buffer): Promise<void> {
  const temp = path.join(path.dirname(dest), `.${path.basename(dest)}.${randomBytes(6).toString("hex")}.tmp`);
  const h = await fs.open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, STORE_FILE_MODE);
  try {
    await h.writeFile(bytes);
    await h.sync();
  } finally {
    await h.close();
  }
  try {
    await fs.link(temp, dest);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new ProfileError("NARWHAL_PROFILE_STORE", `output exists: ${dest}; choose a fresh profile path`);
    throw err;
  } finally {
    await fs.rm(temp, { force: true });
  }
}

/** Writes a refit's or merge's store and sidecar to paths that must not exist yet. */
export async function writeFresh(storePath: string, storeBytes: Buffer, samplesBytes: Buffer): Promise<{ path: string; samplesPath: string }> {
  await checkOutputs(storePath, "fresh");
  await fs.mkdir(path.dirname(storePath), { recursive: true, mode: STORE_FOLDER_MODE });
  const sidecar = samplesPath(storePath);
  await linkFresh(sidecar, samplesBytes);
  await linkFresh(storePath, storeBytes);
  return { path: storePath, samplesPath: sidecar };
}

/**
 * The sidecar alone, when a sweep stops before any row is written: fresh (it must not exist) on a first
 * write without `--overwrite`, else replaced whole by a rename.
 */
export async function writeSidecar(storePath: string, bytes: Buffer, fresh: boolean): Promise<string> {
  const sidecar = samplesPath(storePath);
  if ((await kind(sidecar)) === "symlink") throw new ProfileError("NARWHAL_PROFILE_STORE", `refusing symlink output: ${sidecar}`);
  await fs.mkdir(path.dirname(sidecar), { recursive: true, mode: STORE_FOLDER_MODE });
  if (fresh) {
    await linkFresh(sidecar, bytes);
    return sidecar;
  }
  const temp = path.join(path.dirname(sidecar), `.${path.basename(sidecar)}.${randomBytes(6).toString("hex")}.tmp`);
  await fs.writeFile(temp, bytes, { mode: STORE_FILE_MODE, flag: "wx" });
  await fs.rename(temp, sidecar);
  return sidecar;
}
