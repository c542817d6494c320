/**
 * Checkpoint identity, pure: which files count, how they are ordered, and the digest that names the
 * whole tree. The remote script (hash-script.ts) applies the same exclusion rule and ordering; this
 * module is the reference and recomputes every digest from the entries it is given.
 */
import { createHash } from "node:crypto";

/** What a file looked like when its sha256 was taken; any change means its bytes must be read again. */
export interface FileFingerprint {
  size: number;
  /** Decimal strings: nanosecond times and inode numbers exceed 2**53, which a JS number cannot hold. */
  mtimeNs: string;
  ctimeNs: string;
  inode: string;
}

export interface ManifestEntry {
  /** Relative to the checkpoint root, `/`-separated, UTF-8, never containing a tab or newline. */
  path: string;
  size: number;
  /** Lowercase hex. */
  sha256: string;
  fingerprint: FileFingerprint;
}

/** Something in the directory that is not cleanly "a regular file of the snapshot". */
export interface CheckpointProblem {
  path: string;
  /**
   * symlink_outside_root: hashed (the engine loads it) but its bytes live outside the staged snapshot;
   * dangling_symlink: points nowhere, not hashed; symlinked_directory: not followed, not hashed;
   * not_a_regular_file: FIFO, socket or device, never opened.
   */
  kind: "symlink_outside_root" | "dangling_symlink" | "symlinked_directory" | "not_a_regular_file";
  detail: string;
}

export interface CheckpointManifest {
  /** The directory as the host sees it. */
  root: string;
  /** Retained files, sorted by `comparePaths`. */
  files: ManifestEntry[];
  /** The checkpoint's identity: see `canonicalManifestText`. Lowercase hex. */
  modelTreeSha256: string;
  /** sha256 of the root config.json, or null when there is none. Lowercase hex. */
  configSha256: string | null;
  problems: CheckpointProblem[];
  /**
   * Host clock (ns, decimal string) when the scan began. Bookkeeping for the next scan's reuse rule,
   * not identity: a file whose ctime is within the racy window of this instant is re-read next time.
   */
  scannedAtNs: string;
}

/**
 * The runbook's filter: every regular file except the ROOT README.md (a nested one is kept: it may be
 * code or data the model ships) and anything under `.cache/huggingface/` (download metadata).
 */
export function isRetained(relPath: string): boolean {
  return relPath !== "README.md" && !relPath.startsWith(".cache/huggingface/");
}

/** Byte order of the UTF-8 encodings (= code point order), the order Python's sort gives too. */
export function comparePaths(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

const HEX64 = /^[0-9a-f]{64}$/;

/**
 * The canonical manifest: for each retained file in `comparePaths` order, one line
 * `<path>\t<size in decimal, no leading zeros>\t<sha256 lowercase hex>\n`, UTF-8, no header and no
 * trailing text. An empty tree is the empty string. Fingerprints and the root are not part of it, so
 * replicas staged at different times or paths share one identity.
 */
export function canonicalManifestText(files: ReadonlyArray<Pick<ManifestEntry, "path" | "size" | "sha256">>): string {
  return [...files]
    .sort((a, b) => comparePaths(a.path, b.path))
    .map((f) => `${f.path}\t${f.size}\t${f.sha256}\n`)
    .join("");
}

/** `modelTreeSha256`: lowercase hex sha256 of `canonicalManifestText`. */
export function modelTreeSha256(files: ReadonlyArray<Pick<ManifestEntry, "path" | "size" | "sha256">>): string {
  return createHash("sha256").update(canonicalManifestText(files), "utf8").digest("hex");
}

/** Rejects an entry the canonical form cannot carry unambiguously; the message names the path. */
export function checkEntry(e: ManifestEntry): void {
  if (e.path === "" || /[\t\n]/.test(e.path) || e.path.startsWith("/") || e.path.split("/").some((s) => s === "" || s === "." || s === ".."))
    throw new Error(`checkpoint manifest: unusable path ${JSON.stringify(e.path)}`);
  if (!Number.isSafeInteger(e.size) || e.size < 0) throw new Error(`checkpoint manifest: ${e.path}: bad size ${e.size}`);
  if (!HEX64.test(e.sha256)) throw new Error(`checkpoint manifest: ${e.path}: bad sha256 ${JSON.stringify(e.sha256)}`);
}

/** Assembles a manifest from retained entries: sorts, checks, and computes both digests. */
export function buildManifest(args: {
  root: string;
  files: ReadonlyArray<ManifestEntry>;
  problems?: ReadonlyArray<CheckpointProblem>;
  scannedAtNs: string;
}): CheckpointManifest {
  const files = [...args.files].sort((a, b) => comparePaths(a.path, b.path));
  files.forEach((e, i) => {
    checkEntry(e);
    if (!isRetained(e.path)) throw new Error(`checkpoint manifest: ${e.path} is excluded by the runbook's filter`);
    if (i > 0 && files[i - 1].path === e.path) throw new Error(`checkpoint manifest: ${e.path} listed twice`);
  });
  return {
    root: args.root,
    files,
    modelTreeSha256: modelTreeSha256(files),
    configSha256: files.find((f) => f.path === "config.json")?.sha256 ?? null,
    problems: [...(args.problems ?? [])].sort((a, b) => comparePaths(a.path, b.path)),
    scannedAtNs: args.scannedAtNs,
  };
}
