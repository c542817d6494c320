/**
 * The evidence store: immutable records and artifacts, each named by the SHA-256 of its exact bytes, in
 * `runs/<stack>/evidence/` or an S3 bucket (backends/). Pulumi state keeps only `{digest, relativePath}`;
 * a file whose bytes no longer hash to that digest is invalid evidence, and the resource that wrote it
 * must measure again.
 */
import { createHash } from "node:crypto";
import * as path from "node:path";
import { canonicalJson } from "../digest";
import { EvidenceError } from "./errors";
import { artifactPath, checkKind, parseStoredPath, recordPath, type StoredPath } from "./paths";
import { DIGEST_PATTERN, EvidenceArtifactSchema, parseEvidenceRecord, type EvidenceArtifact, type EvidenceRecord } from "./record";
import { SecretRegistry, type SecretInValue } from "./secrets";
import { isStackFolderName } from "../stack-name";
import type { EvidenceBackend, ListedRecord } from "./backends/backend";
import { FolderBackend } from "./backends/folder";

export type { ListedRecord } from "./backends/backend";

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

/** The result of `verify`: never a throw. */
export type VerifyResult = { readonly valid: true } | { readonly valid: false; readonly reason: string };

const sha256Hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

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
 * Immutable, content-addressed evidence files under one root: a local folder or an S3 prefix.
 *
 * - A write never replaces a file and never follows a symbolic link; a folder's files are 0600 in 0700 folders.
 * - Writing the same record twice (or from several promises at once) is fine and returns the same digest.
 * - `write` and `writeArtifact` refuse anything holding a registered secret, before touching the store.
 */
export class EvidenceStore {
  /** The store as messages name it: the folder's absolute path, or the S3 prefix and its endpoint. */
  readonly root: string;
  private readonly backend: EvidenceBackend;
  private readonly secrets: SecretRegistry;

  /** @param where a folder (the store's root) or a backend (backends/) */
  constructor(where: string | EvidenceBackend, options: EvidenceStoreOptions = {}) {
    this.backend = typeof where === "string" ? new FolderBackend(where, options.owner ?? process.getuid?.()) : where;
    this.root = this.backend.name;
    this.secrets = new SecretRegistry(options.secrets);
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
    await this.backend.create(stored, bytes);
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
    await this.backend.create(stored, data);
    return EvidenceArtifactSchema.parse({ name, relativePath: stored.relativePath, sha256: `sha256:${stored.hex}`, bytes: data.byteLength });
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
    await this.backend.create(stored, bytes);
  }

  /** The bytes of a stored file, checked against the digest Pulumi state holds; throws `NARWHAL_EVIDENCE_INVALID`. */
  private async load(relativePath: string, expectedDigest: string, type: StoredPath["type"]): Promise<Buffer> {
    const file = this.backend.where(relativePath);
    const invalid = (found: string) => new EvidenceError("NARWHAL_EVIDENCE_INVALID", `evidence ${file} is invalid: expected ${expectedDigest}, found ${found}`);
    const stored = parseStoredPath(relativePath);
    if (!stored || stored.type !== type) {
      throw new EvidenceError("NARWHAL_EVIDENCE_INVALID", `evidence path ${JSON.stringify(relativePath)} is invalid: it is not a ${type} path this store writes`);
    }
    if (!DIGEST_PATTERN.test(expectedDigest)) throw invalid(`an expected digest that is not "sha256:<64 hex>"`);
    if (`sha256:${stored.hex}` !== expectedDigest) throw invalid(`a path named for sha256:${stored.hex}`);
    const read = await this.backend.load(stored);
    if (!read.ok) throw invalid(read.found);
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
      throw new EvidenceError("NARWHAL_EVIDENCE_INVALID", `evidence ${this.backend.where(relativePath)} matches ${expectedDigest} but is not a record this program reads: ${why}`);
    }
  }

  /** The bytes of an artifact, checked like {@link read}. */
  async readArtifact(relativePath: string, expectedDigest: string): Promise<Buffer> {
    return this.load(relativePath, expectedDigest, "artifact");
  }

  /** The exact bytes of a record or an artifact, checked like {@link read}: what another store can {@link adopt}. */
  async readBytes(relativePath: string, expectedDigest: string): Promise<Buffer> {
    return this.load(relativePath, expectedDigest, parseStoredPath(relativePath)?.type ?? "record");
  }

  /**
   * Whether a record or artifact is still valid evidence; the reason says why not. A store that cannot be
   * asked (unreachable, refusing the credentials) throws: that says nothing about the evidence, and must
   * not pass for evidence found altered, which would make every resource measure again.
   */
  async verify(relativePath: string, digest: string): Promise<VerifyResult> {
    try {
      const stored = parseStoredPath(relativePath);
      if (stored?.type === "artifact") await this.readArtifact(relativePath, digest);
      else await this.read(relativePath, digest);
      return { valid: true };
    } catch (error) {
      if (STORE_DOWN.has((error as { code?: string }).code ?? "")) throw error;
      return { valid: false, reason: error instanceof Error ? error.message : String(error) };
    }
  }

  /**
   * The record files of one kind, or of every kind, sorted by path. Temporary files and artifacts are
   * not listed.
   */
  async list(kind?: string): Promise<ListedRecord[]> {
    const out = await this.backend.list(kind);
    return out.sort((a, b) => (a.relativePath < b.relativePath ? -1 : a.relativePath > b.relativePath ? 1 : 0));
  }
}

/** Errors that say the store could not be asked, not what it holds. */
const STORE_DOWN = new Set(["NARWHAL_EVIDENCE_UNREACHABLE", "NARWHAL_EVIDENCE_CREDENTIALS", "NARWHAL_EVIDENCE_LOCATION", "NARWHAL_EVIDENCE_REFUSED"]);
