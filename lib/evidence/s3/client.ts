/**
 * The few S3 calls the evidence store makes, signed with SigV4 and sent with undici (required at call
 * time). Path-style addressing (`<endpoint>/<bucket>/<key>`), which AWS and every S3-compatible server
 * answer. Every request has one named bound; a store that does not answer is an error of its own
 * (`NARWHAL_EVIDENCE_UNREACHABLE`), never mistaken for a missing or altered record.
 */
import { createHash } from "node:crypto";
import { EvidenceError } from "../errors";
import { uriEncode, signRequest, type S3Credentials } from "./sigv4";

/** Each request's bound, connect to last byte. Records are kilobytes; a store slower than this is down. */
export const S3_REQUEST_TIMEOUT_S = 30;
/** Tries of a request the store failed (5xx) or dropped; a refusal (4xx) is never tried again. */
const ATTEMPTS = 3;

export interface S3Target {
  readonly endpoint: string;
  readonly bucket: string;
  readonly region: string;
  /** How messages name the store (no credential in it). */
  readonly name: string;
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** The credentials the Pulumi CLI's S3 backend takes too; throws naming the variables when absent. */
export function credentialsFromEnv(name: string, env: NodeJS.ProcessEnv = process.env): S3Credentials {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw new EvidenceError(
      "NARWHAL_EVIDENCE_CREDENTIALS",
      `evidence store ${name} needs credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment of pulumi and npm run (for the project's own store: eval "$(bash scripts/object-store.sh env)")`,
    );
  }
  return { accessKeyId, secretAccessKey, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) };
}

/** `<Code>` and `<Message>` of an S3 error body, for messages. */
function s3ErrorText(body: Buffer): string {
  const text = body.toString("utf8");
  const tag = (t: string) => new RegExp(`<${t}>([^<]*)</${t}>`).exec(text)?.[1];
  const code = tag("Code");
  const message = tag("Message");
  return [code, message].filter(Boolean).join(": ") || text.slice(0, 120).replace(/\s+/g, " ") || "no details";
}

const xmlText = (s: string) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, "&");

export class S3Bucket {
  constructor(
    readonly target: S3Target,
    private readonly credentials: S3Credentials,
  ) {}

  private url(key: string | undefined, query: Record<string, string> = {}): URL {
    const path = key === undefined ? `/${this.target.bucket}` : `/${this.target.bucket}/${uriEncode(key, true)}`;
    const url = new URL(path, this.target.endpoint);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    return url;
  }

  private async send(method: string, url: URL, body: Uint8Array | undefined, headers: Record<string, string>, what: string): Promise<Reply> {
    const { request } = require("undici") as typeof import("undici");
    const payload = body ?? new Uint8Array();
    const payloadSha256 = createHash("sha256").update(payload).digest("hex");
    let last: unknown;
    for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
      const signed = signRequest({ method, url, headers, payloadSha256 }, this.credentials, this.target.region, new Date());
      try {
        const res = await request(url, {
          method: method as "GET",
          headers: signed,
          body: body && Buffer.from(body.buffer, body.byteOffset, body.byteLength),
          signal: AbortSignal.timeout(S3_REQUEST_TIMEOUT_S * 1000),
          headersTimeout: S3_REQUEST_TIMEOUT_S * 1000,
          bodyTimeout: S3_REQUEST_TIMEOUT_S * 1000,
        });
        const reply = { status: res.statusCode, headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()) };
        if (reply.status < 500 || attempt === ATTEMPTS) return reply;
        last = new Error(`HTTP ${reply.status} ${s3ErrorText(reply.body)}`);
      } catch (error) {
        last = error;
      }
      await new Promise((r) => setTimeout(r, 250 * attempt));
    }
    const cause = last as { name?: string; code?: string; message?: string } | undefined;
    const why = cause?.name === "TimeoutError" ? `no answer within ${S3_REQUEST_TIMEOUT_S} s (evidence store request timeout)` : (cause?.code ?? cause?.message ?? String(last));
    throw new EvidenceError(
      "NARWHAL_EVIDENCE_UNREACHABLE",
      `evidence store ${this.target.name} did not answer ${what} (${why}, ${ATTEMPTS} tries); nothing was recorded or judged. Start the store or fix evidence.store, then run again`,
    );
  }

  private refused(reply: Reply, what: string): EvidenceError {
    const text = s3ErrorText(reply.body);
    if (reply.status === 403 && /SignatureDoesNotMatch|InvalidAccessKeyId/.test(text)) {
      return new EvidenceError("NARWHAL_EVIDENCE_CREDENTIALS", `evidence store ${this.target.name} refused the credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for ${what} (${text}); set the store's own`);
    }
    if (reply.status === 404 && /NoSuchBucket/.test(text)) {
      return new EvidenceError("NARWHAL_EVIDENCE_LOCATION", `evidence store ${this.target.name}: bucket ${this.target.bucket} does not exist (${text}); create it first`);
    }
    return new EvidenceError("NARWHAL_EVIDENCE_REFUSED", `evidence store ${this.target.name} refused ${what}: HTTP ${reply.status} ${text}`);
  }

  /** Whether the bucket answers to these credentials; throws naming why not. */
  async check(): Promise<void> {
    const reply = await this.send("GET", this.url(undefined, { "list-type": "2", "max-keys": "1" }), undefined, {}, "a listing of the bucket");
    if (reply.status !== 200) throw this.refused(reply, "a listing of the bucket");
  }

  /** Creates the bucket; one that exists and is ours already is fine. */
  async createBucket(): Promise<void> {
    const reply = await this.send("PUT", this.url(undefined), undefined, {}, "the bucket's creation");
    if (reply.status === 200 || (reply.status === 409 && /BucketAlreadyOwnedByYou/.test(s3ErrorText(reply.body)))) return;
    throw this.refused(reply, "the bucket's creation");
  }

  /**
   * Writes an object only when no object has that key (`If-None-Match: *`, one atomic PUT: no reader ever
   * sees part of it). "exists" when one is there already, whatever its bytes.
   */
  async putIfAbsent(key: string, bytes: Uint8Array): Promise<"created" | "exists"> {
    return this.putWhen(key, bytes, { "if-none-match": "*" });
  }

  /** Replaces an object only while its ETag is `etag` (or, for undefined, while there is none): "exists" when it changed. */
  async putIfUnchanged(key: string, bytes: Uint8Array, etag: string | undefined): Promise<"created" | "exists"> {
    return this.putWhen(key, bytes, etag === undefined ? { "if-none-match": "*" } : { "if-match": etag });
  }

  private async putWhen(key: string, bytes: Uint8Array, condition: Record<string, string>): Promise<"created" | "exists"> {
    const what = `the write of ${key}`;
    const reply = await this.send("PUT", this.url(key), bytes, { "content-type": "application/octet-stream", ...condition }, what);
    if (reply.status === 200) return "created";
    // 409: a concurrent conditional write of the same key is under way; the caller reads what won.
    if (reply.status === 412 || reply.status === 409) return "exists";
    if (reply.status === 403) {
      const refusal = this.refused(reply, what);
      if (refusal.code === "NARWHAL_EVIDENCE_CREDENTIALS") throw refusal;
      throw new EvidenceError(
        "NARWHAL_EVIDENCE_UNWRITABLE",
        `evidence store ${this.target.name} refuses writes: ${s3ErrorText(reply.body)} (HTTP 403); nothing was recorded as measured. Grant these credentials s3:PutObject on the bucket and run again`,
      );
    }
    throw this.refused(reply, what);
  }

  /** An object's bytes and ETag, or undefined when there is none. */
  async get(key: string): Promise<{ bytes: Buffer; etag: string | undefined } | undefined> {
    const what = `the read of ${key}`;
    const reply = await this.send("GET", this.url(key), undefined, {}, what);
    if (reply.status === 404 && !/NoSuchBucket/.test(s3ErrorText(reply.body))) return undefined;
    if (reply.status !== 200) throw this.refused(reply, what);
    const etag = reply.headers.etag;
    return { bytes: reply.body, etag: typeof etag === "string" ? etag : undefined };
  }

  /** Every key under `prefix`, in the store's (lexicographic) order. */
  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const query: Record<string, string> = { "list-type": "2", prefix, ...(token ? { "continuation-token": token } : {}) };
      const reply = await this.send("GET", this.url(undefined, query), undefined, {}, `a listing of ${prefix}`);
      if (reply.status !== 200) throw this.refused(reply, `a listing of ${prefix}`);
      const text = reply.body.toString("utf8");
      for (const m of text.matchAll(/<Key>([^<]*)<\/Key>/g)) keys.push(xmlText(m[1]));
      const truncated = /<IsTruncated>true<\/IsTruncated>/.test(text);
      token = truncated ? xmlText(/<NextContinuationToken>([^<]*)<\/NextContinuationToken>/.exec(text)?.[1] ?? "") : undefined;
      if (truncated && !token) throw new EvidenceError("NARWHAL_EVIDENCE_REFUSED", `evidence store ${this.target.name} cut a listing of ${prefix} short without a continuation token`);
    } while (token);
    return keys;
  }
}
