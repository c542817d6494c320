/**
 * AWS Signature Version 4 for S3 requests, header-based, with the payload's SHA-256 signed: the server
 * checks the bytes it received against it, so a body cut or changed in transit is refused, not stored.
 * Pure: the caller passes the clock. Spec: "Authenticating Requests (AWS Signature Version 4)".
 */
import { createHash, createHmac } from "node:crypto";

export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface UnsignedRequest {
  readonly method: string;
  readonly url: URL;
  /** Headers to sign besides host and the x-amz-* the signer adds; names in any case. */
  readonly headers: Readonly<Record<string, string>>;
  /** Hex SHA-256 of the body (of no bytes when there is none). */
  readonly payloadSha256: string;
}

export const EMPTY_SHA256 = createHash("sha256").update("").digest("hex");

const sha256Hex = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");
const hmac = (key: Uint8Array | string, data: string) => createHmac("sha256", key).update(data).digest();

/** RFC 3986 encoding as SigV4 wants it: everything but unreserved characters, `/` kept in paths. */
export function uriEncode(text: string, keepSlash: boolean): string {
  return [...Buffer.from(text, "utf8")]
    .map((b) => {
      const c = String.fromCharCode(b);
      if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === "/")) return c;
      return `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
    })
    .join("");
}

function canonicalQuery(url: URL): string {
  const pairs = [...url.searchParams].map(([k, v]) => [uriEncode(k, false), uriEncode(v, false)] as const);
  pairs.sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join("&");
}

/** `20130524T000000Z` */
export function amzDate(now: Date): string {
  return now.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

/**
 * The headers to send: the request's own, `host`, `x-amz-date`, `x-amz-content-sha256`, the session token
 * when there is one, and `authorization`. `url.pathname` must already be encoded as it goes on the wire.
 */
export function signRequest(request: UnsignedRequest, credentials: S3Credentials, region: string, now: Date): Record<string, string> {
  const date = amzDate(now);
  const day = date.slice(0, 8);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value.trim().replace(/\s+/g, " ");
  headers.host = request.url.host;
  headers["x-amz-date"] = date;
  headers["x-amz-content-sha256"] = request.payloadSha256;
  if (credentials.sessionToken) headers["x-amz-security-token"] = credentials.sessionToken;
  const names = Object.keys(headers).sort();
  const signedHeaders = names.join(";");
  const canonical = [
    request.method,
    request.url.pathname || "/",
    canonicalQuery(request.url),
    names.map((n) => `${n}:${headers[n]}\n`).join(""),
    signedHeaders,
    request.payloadSha256,
  ].join("\n");
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", date, scope, sha256Hex(canonical)].join("\n");
  const key = hmac(hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, day), region), "s3"), "aws4_request");
  const signature = createHmac("sha256", key).update(toSign).digest("hex");
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return headers;
}
