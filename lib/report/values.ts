import { createHash } from "node:crypto";
import { canonicalJson } from "../digest";
import { isSecret } from "../secret-envelope";
import { UNKNOWN } from "../unknown";

export const SECRET_TEXT = "[secret]";
export const UNKNOWN_TEXT = "(known after apply)";
/** Strings up to this length print as they are; a sha256 digest with its prefix is 71. */
const MAX_PLAIN = 96;

function some(v: unknown, pred: (x: unknown) => boolean): boolean {
  if (pred(v)) return true;
  if (Array.isArray(v)) return v.some((x) => some(x, pred));
  if (v && typeof v === "object") return Object.values(v).some((x) => some(x, pred));
  return false;
}

export const holdsSecret = (v: unknown): boolean => some(v, isSecret);
export const holdsUnknown = (v: unknown): boolean => some(v, (x) => x === UNKNOWN);

/** Secrets replaced by their marker, so a digest of the value is a digest of what the event showed. */
function masked(v: unknown): unknown {
  if (isSecret(v)) return SECRET_TEXT;
  if (Array.isArray(v)) return v.map(masked);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, masked(x)]));
  return v;
}

/** Equal when the engine showed the same value for both (secrets compare by their marker only). */
export function sameValue(a: unknown, b: unknown): boolean {
  return canonicalJson(masked(a)) === canonicalJson(masked(b));
}

const shortDigest = (text: string): string => "sha256:" + createHash("sha256").update(text).digest("hex").slice(0, 16);

/**
 * One value as the report prints it: a secret as `[secret]`, an unknown as `(known after apply)`, a short
 * scalar as itself, anything longer or structured as a digest of its canonical JSON (secrets masked).
 */
export function renderValue(v: unknown): string {
  if (v === undefined || v === null) return "(none)";
  if (isSecret(v)) return SECRET_TEXT;
  if (v === UNKNOWN) return UNKNOWN_TEXT;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (typeof v === "string") return v.length <= MAX_PLAIN ? v : `${shortDigest(v)} (${v.length} chars)`;
  const digest = shortDigest(canonicalJson(masked(v)));
  return holdsUnknown(v) ? `${digest} (partly known after apply)` : digest;
}
