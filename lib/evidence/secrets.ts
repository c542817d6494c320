/**
 * Finds registered secret values (engine API key, SSH keys and passwords, Grafana admin password) in
 * a record or an artifact before anything is written. It reports where, never what: results carry a
 * JSON path or a byte offset and the encoding that matched, not the value.
 */
import { canonicalJson } from "../digest";
import { renderJsonPath } from "./json-path";

/** How a secret appeared. */
export type SecretEncoding = "plain" | "JSON-escaped" | "URL-encoded" | "base64" | "base64url";

/** Where a secret was found in a JSON value: a rendered JSON path, and whether it was a key there. */
export interface SecretInValue {
  readonly path: string;
  readonly inKey: boolean;
  readonly encoding: SecretEncoding;
}

/** Where a secret was found in raw bytes. */
export interface SecretInBytes {
  readonly offset: number;
  readonly encoding: SecretEncoding;
}

interface Needle {
  readonly text: string;
  readonly bytes: Buffer;
  readonly encoding: SecretEncoding;
}

/**
 * Base64 fragments shorter than this are not searched inside longer base64 text: a short fragment
 * matches random base64 by chance (4 chars: about 1 in 17 million positions), which would refuse honest
 * evidence. The whole padded encoding of a short secret is still searched.
 */
const MIN_BASE64_FRAGMENT = 8;

/** Characters of the encoding at each byte offset that depend on bytes before the secret. */
const MIXED_LEADING_CHARS = [0, 2, 3] as const;

/**
 * The base64 text that must appear wherever the secret is base64-encoded as part of a longer value
 * (`Basic base64(user:password)`, a key inside an encoded file): for each of the three byte alignments,
 * the characters that depend on the secret's bytes alone.
 */
function base64Fragments(secret: Buffer): string[] {
  const out: string[] = [];
  for (let k = 0; k < 3; k++) {
    const encoded = Buffer.concat([Buffer.alloc(k), secret]).toString("base64");
    const fragment = encoded.slice(MIXED_LEADING_CHARS[k], Math.floor((8 * (k + secret.length)) / 6));
    if (fragment.length >= MIN_BASE64_FRAGMENT) out.push(fragment);
  }
  return out;
}

const toBase64Url = (s: string) => s.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** Every text form in which a secret could reach a record or an artifact. */
function needlesFor(secret: string): Needle[] {
  const bytes = Buffer.from(secret, "utf8");
  const forms: Array<[string, SecretEncoding]> = [
    [secret, "plain"],
    [JSON.stringify(secret).slice(1, -1), "JSON-escaped"],
    [encodeURIComponent(secret), "URL-encoded"],
    [bytes.toString("base64"), "base64"],
    [toBase64Url(bytes.toString("base64")), "base64url"],
  ];
  for (const fragment of base64Fragments(bytes)) forms.push([fragment, "base64"], [toBase64Url(fragment), "base64url"]);
  const seen = new Set<string>();
  return forms
    .filter(([text]) => text.length > 0 && !seen.has(text) && seen.add(text))
    .map(([text, encoding]) => ({ text, bytes: Buffer.from(text, "utf8"), encoding }));
}

/**
 * The set of secret values the store refuses to write. Values are kept only in memory, in this object.
 * Empty values are ignored: an unset optional credential cannot leak and would otherwise match everything.
 */
export class SecretRegistry {
  private readonly needles: Needle[] = [];
  private readonly values = new Set<string>();

  constructor(secrets: Iterable<string | undefined> = []) {
    this.add(...secrets);
  }

  /** Registers more secret values (a key read from config later, a password rotated in). */
  add(...secrets: Array<string | undefined>): void {
    for (const secret of secrets) {
      if (!secret || this.values.has(secret)) continue;
      this.values.add(secret);
      this.needles.push(...needlesFor(secret));
    }
  }

  /** How many distinct values are registered. */
  get size(): number {
    return this.values.size;
  }

  private match(text: string): Needle | undefined {
    return this.needles.find((n) => text.includes(n.text));
  }

  /**
   * The first place a registered secret appears in a JSON value: every key and every string, number
   * and boolean is checked, then the canonical JSON text as a whole, as a backstop for forms the walk
   * cannot see. Cycles and non-JSON values are skipped here; the record schema refuses them.
   */
  findInValue(value: unknown): SecretInValue | undefined {
    if (this.needles.length === 0) return undefined;
    const ancestors = new Set<object>();
    const walk = (v: unknown, at: PropertyKey[]): SecretInValue | undefined => {
      if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") {
        const hit = this.match(String(v));
        return hit && { path: renderJsonPath(at), inKey: false, encoding: hit.encoding };
      }
      if (v === null || typeof v !== "object" || ancestors.has(v)) return undefined;
      ancestors.add(v);
      try {
        for (const [key, child] of Array.isArray(v) ? v.entries() : Object.entries(v)) {
          if (typeof key === "string") {
            const hit = this.match(key);
            // The key is the secret, so the path names the object that holds it, not the key.
            if (hit) return { path: renderJsonPath(at), inKey: true, encoding: hit.encoding };
          }
          const found = walk(child, [...at, key]);
          if (found) return found;
        }
      } finally {
        ancestors.delete(v);
      }
      return undefined;
    };
    const found = walk(value, []);
    if (found) return found;
    let text: string | undefined;
    try {
      text = canonicalJson(value);
    } catch {
      return undefined;
    }
    const hit = text === undefined ? undefined : this.match(text);
    return hit && { path: "(record)", inKey: false, encoding: hit.encoding };
  }

  /** `text` with every form of every registered secret replaced by `replacement` (longest forms first). */
  redact(text: string, replacement: string): string {
    const byLength = [...this.needles].sort((a, b) => b.text.length - a.text.length);
    return byLength.reduce((out, needle) => out.split(needle.text).join(replacement), text);
  }

  /** The first byte offset at which a registered secret appears in raw bytes, in any of its forms. */
  findInBytes(bytes: Uint8Array): SecretInBytes | undefined {
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let best: SecretInBytes | undefined;
    for (const needle of this.needles) {
      const offset = buffer.indexOf(needle.bytes);
      if (offset >= 0 && (best === undefined || offset < best.offset)) best = { offset, encoding: needle.encoding };
    }
    return best;
  }
}
