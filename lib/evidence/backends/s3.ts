/**
 * The evidence store under one prefix of an S3-compatible bucket, shared by every operator and CI job of
 * a stack. The same layout as the folder (`<kind>/<hex>.json`, `<kind>/artifacts/<hex>`) under
 * `<prefix>/<stack>/evidence/`. A write is one conditional PUT (`If-None-Match: *`): it never replaces an
 * object and is visible whole or not at all; every read is checked against its digest by the store.
 */
import { createHash } from "node:crypto";
import { EvidenceError } from "../errors";
import { describeLocation, stackPrefix, type S3Location } from "../location";
import { checkKind, parseStoredPath, type StoredPath } from "../paths";
import { S3Bucket, credentialsFromEnv } from "../s3/client";
import type { S3Credentials } from "../s3/sigv4";
import type { EvidenceBackend, ListedRecord, Loaded } from "./backend";

/** Appends tried while other writers keep changing the same log (a log has one writer per engine). */
const APPEND_ATTEMPTS = 20;

const sha256Hex = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

export class S3Backend implements EvidenceBackend {
  readonly name: string;
  readonly bucket: S3Bucket;
  private readonly prefix: string;

  /** Credentials default to the environment's, as the Pulumi CLI's S3 backend takes them. */
  constructor(location: S3Location, stack: string, credentials?: S3Credentials) {
    this.name = describeLocation(location, stack);
    this.prefix = stackPrefix(location, stack);
    const target = { endpoint: location.endpoint, bucket: location.bucket, region: location.region, name: this.name };
    this.bucket = new S3Bucket(target, credentials ?? credentialsFromEnv(this.name));
  }

  private key(relativePath: string): string {
    return `${this.prefix}/${relativePath}`;
  }

  where(relativePath: string): string {
    return `s3://${this.bucket.target.bucket}/${this.key(relativePath)}`;
  }

  async create(stored: StoredPath, bytes: Uint8Array): Promise<void> {
    if ((await this.bucket.putIfAbsent(this.key(stored.relativePath), bytes)) === "created") return;
    const existing = await this.bucket.get(this.key(stored.relativePath));
    // Gone again between the refused write and this read: only someone deleting evidence does that.
    if (!existing) throw new EvidenceError("NARWHAL_EVIDENCE_CONFLICT", `evidence object ${this.where(stored.relativePath)} was refused as existing, then found missing; write again`);
    if (!existing.bytes.equals(bytes)) {
      throw new EvidenceError(
        "NARWHAL_EVIDENCE_CONFLICT",
        `evidence object ${this.where(stored.relativePath)} already exists with other bytes (sha256:${sha256Hex(existing.bytes)}); it was not replaced. ` +
          "An object named by its digest differs only when it was altered after it was written: copy it elsewhere for inspection and delete it",
      );
    }
  }

  async load(stored: StoredPath): Promise<Loaded> {
    const got = await this.bucket.get(this.key(stored.relativePath));
    return got ? { ok: true, bytes: got.bytes } : { ok: false, found: "nothing" };
  }

  /**
   * An object cannot grow: the log is read and written back one line longer, on the condition that nobody
   * wrote it meanwhile (its ETag), tried again when somebody did. Lines are never lost or reordered.
   */
  async append(relativePath: string, bytes: Uint8Array): Promise<number> {
    const key = this.key(relativePath);
    for (let attempt = 1; attempt <= APPEND_ATTEMPTS; attempt++) {
      const now = await this.bucket.get(key);
      const before = now?.bytes ?? Buffer.alloc(0);
      if (now && now.etag === undefined) throw new EvidenceError("NARWHAL_EVIDENCE_REFUSED", `evidence store ${this.name} gave no ETag for log ${key}; it cannot be appended to safely`);
      if ((await this.bucket.putIfUnchanged(key, Buffer.concat([before, bytes]), now?.etag)) === "created") return before.byteLength;
    }
    throw new EvidenceError("NARWHAL_EVIDENCE_CONFLICT", `evidence log ${this.where(relativePath)} changed under each of ${APPEND_ATTEMPTS} appends; run again`);
  }

  async list(kind?: string): Promise<ListedRecord[]> {
    if (kind !== undefined) checkKind(kind);
    const under = `${this.prefix}/${kind === undefined ? "" : `${kind}/`}`;
    const out: ListedRecord[] = [];
    for (const key of await this.bucket.list(under)) {
      const stored = parseStoredPath(key.slice(this.prefix.length + 1));
      if (stored?.type === "record") out.push({ kind: stored.kind, digest: `sha256:${stored.hex}`, relativePath: stored.relativePath });
    }
    return out;
  }
}
