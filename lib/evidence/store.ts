/**
 * The evidence store: immutable records and artifacts under `runs/<stack>/evidence/`, each named by the
 * SHA-256 of its exact bytes. Pulumi state keeps only `{digest, relativePath}`; a file whose bytes no
 * longer hash to that digest is invalid evidence, and the resource that wrote it must measure again.
 */
import { createHash } from "node:crypto";
import { constants as fsConstants, promises as fsp } from "node:fs";
import * as path from "node:path";
import { canonicalJson } from "../digest";
import { EvidenceError } from "./errors";
import { artifactPath, checkKind, parseStoredPath, recordFileHex, recordPath, type StoredPath } from "./paths";
import { DIGEST_PATTERN, EvidenceArtifactSchema, parseEvidenceRecord, type EvidenceArtifact, type EvidenceRecord, KIND_PATTERN } from "./record";
import { createExclusive, ensureFolders, entryAt, firstBadFolder, readNoFollow, refuseFolder, type Entry } from "./safe-fs";
import { SecretRegistry, type SecretInValue } from "./secrets";
import { unwritableStoreError } from "./unwritable";
import { isStackFolderName } from "../stack-name";

/** Options of {@link EvidenceStore}. */
export interface EvidenceStoreOptions {
  /** Secret values no record or artifact may contain (engine API key, SSH keys and passwords, ...). */
  secrets?: Iterable<string | undefined>;
  /**
   * The user whose pre-existing folders the store may bring to 0700. Defaults to this process's user;
   * another user's folder is left as it is.
   */
  owner?: number;
}

/** Where `write` put a record: what Pulumi state keeps. */
export interface WrittenRecord {
  /** `sha256:<hex>` of the record file's exact bytes (equal to `sha256Json(record)`). */
  readonly digest: string;
  /** `<kind>/<hex>.json`, relative to the store root. */
  readonly relativePath: string;
}

/** One record file found by `list`. Listing does not verify; `read` and `verify` do. */
export interface ListedRecord {
  readonly kind: string;
  readonly digest: string;
  readonly relativePath: string;
}

/** The result of `verify`: never a throw. */
export type VerifyResult = { readonly valid: true } | { readonly valid: false; readonly reason: string };

const sha256Hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Words for what stands where a file or folder was expected. */
const FOUND: Record<Entry, string> = {
  missing: "nothing",
  file: "a regular file",
  symlink: "a symbolic link (not followed)",
  folder: "a folder",
  other: "something that is not a regular file",
};

/** `<project>/runs/<stack>/evidence`, the store root of one stack. */
export function evidenceRoot(projectRoot: string, stack: string): string {
  if (!isStackFolderName(stack)) {
    throw new EvidenceError("NARWHAL_EVIDENCE_PATH", `stack name ${JSON.stringify(stack)} cannot name a folder: expected letters, digits, "_", "." or "-"`);
  }
  return path.join(path.resolve(projectRoot), "runs", stack, "evidence");
}

/**
 * Names a record in messages by kind and subject, but only when neither holds a secret: a refused
 * record's other fields are not safe to print.
 */
function label(record: unknown, secrets: SecretRegistry): string {
  const r = record as { kind?: unknown; subject?: { kind?: unknown; alias?: unknown } } | null;
  const parts = [r?.kind, r?.subject?.kind, r?.subject?.alias];
  const printable = parts.every((p) => typeof p === "string" && /^[A-Za-z0-9._:>-]{1,128}$/.test(p)) && !secrets.findInValue(parts);
  return printable ? `evidence record "${parts[0] as string}" for ${parts[1] as string} ${parts[2] as string}` : "evidence record";
}

function secretMessage(what: string, hit: SecretInValue): string {
  const where = hit.inKey ? `a key of ${hit.path}` : hit.path;
  return `${what} refused: ${where} contains a registered secret (${hit.encoding}); nothing was written. Pass secrets to the engine through its environment or a file, and record only their digest`;
}

/**
 * Immutable, content-addressed evidence files under one root folder.
 *
 * - Files are 0600, folders 0700; a write never replaces a file and never follows a symbolic link.
 * - Writing the same record twice (or from several promises at once) is fine and returns the same digest.
 * - `write` and `writeArtifact` refuse anything holding a registered secret, before touching the disk.
 */
export class EvidenceStore {
  /** Absolute path of the store root. */
  readonly root: string;
  private readonly secrets: SecretRegistry;
  private readonly owner: number | undefined;

  constructor(root: string, options: EvidenceStoreOptions = {}) {
    this.root = path.resolve(root);
    this.secrets = new SecretRegistry(options.secrets);
    this.owner = options.owner ?? process.getuid?.();
  }

  /** Registers more secret values; later writes refuse them too. */
  addSecrets(...secrets: Array<string | undefined>): void {
    this.secrets.add(...secrets);
  }

  /**
   * Validates a record and stores its canonical JSON as `<kind>/<hex>.json`. Throws
   * `NARWHAL_EVIDENCE_SECRET`, `NARWHAL_EVIDENCE_RECORD`, `NARWHAL_EVIDENCE_SYMLINK` or
   * `NARWHAL_EVIDENCE_CONFLICT`; on any of them the store holds no new record.
   */
  async write(record: EvidenceRecord): Promise<WrittenRecord> {
    // Secrets first, on the value as given: a schema message about a misplaced secret must not exist.
    const hit = this.secrets.findInValue(record);
    if (hit) throw new EvidenceError("NARWHAL_EVIDENCE_SECRET", secretMessage(label(record, this.secrets), hit));
    const valid = parseEvidenceRecord(record, label(record, this.secrets));
    const bytes = Buffer.from(canonicalJson(valid), "utf8");
    const stored = recordPath(valid.kind, sha256Hex(bytes));
    await this.create(stored, bytes);
    return { digest: `sha256:${stored.hex}`, relativePath: stored.relativePath };
  }

  /**
   * Stores a raw file (a capture, a tool's output) as `<kind>/artifacts/<hex>` and returns the entry
   * to put in a record's `artifacts`. `name` says what the file was called where it was produced.
   */
  async writeArtifact(kind: string, name: string, bytes: Uint8Array | string): Promise<EvidenceArtifact> {
    checkKind(kind);
    if (this.secrets.findInValue(name)) {
      throw new EvidenceError("NARWHAL_EVIDENCE_SECRET", `${kind} artifact refused: its name contains a registered secret; nothing was written`);
    }
    const data = typeof bytes === "string" ? Buffer.from(bytes, "utf8") : bytes;
    const hit = this.secrets.findInBytes(data);
    if (hit) {
      throw new EvidenceError(
        "NARWHAL_EVIDENCE_SECRET",
        `${kind} artifact ${JSON.stringify(name)} refused: a registered secret (${hit.encoding}) starts at byte ${hit.offset}; nothing was written`,
      );
    }
    const stored = artifactPath(kind, sha256Hex(data));
    await this.create(stored, data);
    return EvidenceArtifactSchema.parse({ name, relativePath: stored.relativePath, sha256: `sha256:${stored.hex}`, bytes: data.byteLength });
  }

  /** Creates a stored file, or accepts the identical file already under its digest name. */
  private async create(stored: StoredPath, bytes: Uint8Array): Promise<void> {
    const fileName = path.basename(stored.relativePath);
    let folder: string;
    try {
      folder = await ensureFolders(this.root, stored.folders, this.owner);
      if ((await createExclusive(folder, fileName, bytes)) === "created") return;
    } catch (error) {
      // A read-only or full store fails the write (so the measurement is not recorded as done) in one line,
      // naming the folder inside the store that refused when the store's root itself still takes writes.
      throw unwritableStoreError(this.root, error, await this.refusingFolder(error)) ?? error;
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
    const folder = path.relative(this.root, own === "folder" ? failed : path.dirname(failed));
    if (!folder || folder.startsWith("..") || path.isAbsolute(folder)) return undefined;
    const rootRefuses = await fsp.access(this.root, fsConstants.W_OK).then(() => false, () => true);
    return rootRefuses ? undefined : `${folder.split(path.sep).join("/")}/`;
  }

  /**
   * Stores a record or artifact file another store of the same layout holds (a measurement kept aside while
   * this store refused writes) at the same relative path, after checking its bytes hash to the name.
   */
  async adopt(relativePath: string, bytes: Uint8Array): Promise<void> {
    const stored = parseStoredPath(relativePath);
    if (!stored || sha256Hex(bytes) !== stored.hex) {
      throw new EvidenceError("NARWHAL_EVIDENCE_INVALID", `evidence ${relativePath} kept aside is invalid: its bytes do not hash to its name; it was not adopted`);
    }
    await this.create(stored, bytes);
  }

  /** The bytes of a stored file, checked against the digest Pulumi state holds; throws `NARWHAL_EVIDENCE_INVALID`. */
  private async load(relativePath: string, expectedDigest: string, type: StoredPath["type"]): Promise<Buffer> {
    const file = path.join(this.root, relativePath);
    const invalid = (found: string) => new EvidenceError("NARWHAL_EVIDENCE_INVALID", `evidence ${file} is invalid: expected ${expectedDigest}, found ${found}`);
    const stored = parseStoredPath(relativePath);
    if (!stored || stored.type !== type) {
      throw new EvidenceError("NARWHAL_EVIDENCE_INVALID", `evidence path ${JSON.stringify(relativePath)} is invalid: it is not a ${type} path this store writes`);
    }
    if (!DIGEST_PATTERN.test(expectedDigest)) throw invalid(`an expected digest that is not "sha256:<64 hex>"`);
    if (`sha256:${stored.hex}` !== expectedDigest) throw invalid(`a path named for sha256:${stored.hex}`);
    const bad = await firstBadFolder(this.root, stored.folders);
    if (bad) throw invalid(`${FOUND[bad.entry]} at ${bad.path}`);
    const read = await readNoFollow(file);
    if (!read.ok) throw invalid(FOUND[read.entry]);
    const actual = `sha256:${sha256Hex(read.bytes)}`;
    if (actual !== expectedDigest) throw invalid(`${actual}: its bytes changed after it was written`);
    return read.bytes;
  }

  /**
   * The record at `relativePath`, after checking its bytes still hash to `expectedDigest`. Throws
   * `NARWHAL_EVIDENCE_INVALID` naming the path and both digests when they do not, and when the file is
   * gone or a symbolic link stands on its path.
   */
  async read(relativePath: string, expectedDigest: string): Promise<EvidenceRecord> {
    const bytes = await this.load(relativePath, expectedDigest, "record");
    try {
      return parseEvidenceRecord(JSON.parse(bytes.toString("utf8")));
    } catch (error) {
      const why = error instanceof EvidenceError ? error.message : String(error);
      throw new EvidenceError("NARWHAL_EVIDENCE_INVALID", `evidence ${path.join(this.root, relativePath)} matches ${expectedDigest} but is not a record this program reads: ${why}`);
    }
  }

  /** The bytes of an artifact, checked like {@link read}. */
  async readArtifact(relativePath: string, expectedDigest: string): Promise<Buffer> {
    return this.load(relativePath, expectedDigest, "artifact");
  }

  /** Whether a record or artifact is still valid evidence; the reason says why not. Never throws. */
  async verify(relativePath: string, digest: string): Promise<VerifyResult> {
    try {
      const stored = parseStoredPath(relativePath);
      if (stored?.type === "artifact") await this.readArtifact(relativePath, digest);
      else await this.read(relativePath, digest);
      return { valid: true };
    } catch (error) {
      return { valid: false, reason: error instanceof Error ? error.message : String(error) };
    }
  }

  /**
   * The record files of one kind, or of every kind, sorted by path. Temporary files and artifacts are
   * not listed. A symbolic link in place of the root or a kind folder is refused, not followed.
   */
  async list(kind?: string): Promise<ListedRecord[]> {
    if (kind !== undefined) checkKind(kind);
    const rootEntry = await entryAt(this.root);
    if (rootEntry === "missing") return [];
    if (rootEntry !== "folder") refuseFolder(this.root, rootEntry);
    const kinds = kind !== undefined ? [kind] : (await fsp.readdir(this.root)).filter((k) => KIND_PATTERN.test(k));
    const out: ListedRecord[] = [];
    for (const k of kinds) {
      const folder = path.join(this.root, k);
      const entry = await entryAt(folder);
      if (entry === "missing") continue;
      if (entry !== "folder") refuseFolder(folder, entry);
      for (const dirent of await fsp.readdir(folder, { withFileTypes: true })) {
        const hex = dirent.isFile() ? recordFileHex(dirent.name) : undefined;
        if (hex) out.push({ kind: k, digest: `sha256:${hex}`, relativePath: `${k}/${dirent.name}` });
      }
    }
    return out.sort((a, b) => (a.relativePath < b.relativePath ? -1 : a.relativePath > b.relativePath ? 1 : 0));
  }
}
