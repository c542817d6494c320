/**
 * narwhal's `canonical_digest`: `sha256:` over `json.dumps(value, sort_keys=True, separators=(",", ":"))`
 * (ensure_ascii on), byte for byte, so a digest computed here equals the one the sidecar and
 * `narwhal-check` compute. Python writes a float as `repr(float)` (`1754000000.0`), which a JS number
 * cannot tell apart from an int, so numbers read from the sidecar keep their text: parse with
 * {@link parseJsonKeepingNumbers} and the digest sees exactly the digits Python wrote.
 */
import { createHash } from "node:crypto";
import { AttestationError } from "./errors";
import { codePointCompare, pyString } from "../cache/python-json";

/** A JSON number as written in the text it was read from. */
export class JsonNumberText {
  constructor(readonly text: string) {}
  valueOf(): number {
    return Number(this.text);
  }
}

/** Python's compact, key-sorted, ASCII-only JSON text of a JSON value. */
export function pythonCompactJson(value: unknown): string {
  if (value === null) return "null";
  if (value instanceof JsonNumberText) return value.text;
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isSafeInteger(value)) {
        throw new AttestationError("NARWHAL_JSON", `${value} is not a safe integer: Python would write a float as repr(), so keep the number's text`);
      }
      return String(value);
    case "string":
      return pyString(value);
    case "object": {
      if (Array.isArray(value)) return "[" + value.map(pythonCompactJson).join(",") + "]";
      const entries = Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => codePointCompare(a, b));
      return "{" + entries.map(([k, v]) => `${pyString(k)}:${pythonCompactJson(v)}`).join(",") + "}";
    }
    default:
      throw new AttestationError("NARWHAL_JSON", `a ${typeof value} has no JSON form`);
  }
}

/** `sha256:<hex>` of {@link pythonCompactJson}: narwhal.contracts.canonical_digest. */
export function canonicalDigest(value: unknown): string {
  return "sha256:" + createHash("sha256").update(pythonCompactJson(value)).digest("hex");
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const WHITESPACE = /[ \t\n\r]*/y;

/**
 * JSON.parse, except that every number is a {@link JsonNumberText} holding its exact text. Throws
 * `NARWHAL_JSON` naming the offset of the first problem.
 */
export function parseJsonKeepingNumbers(text: string): unknown {
  let at = 0;
  const fail = (what: string): never => {
    throw new AttestationError("NARWHAL_JSON", `not JSON: ${what} at offset ${at}`);
  };
  const skip = () => {
    WHITESPACE.lastIndex = at;
    WHITESPACE.exec(text);
    at = WHITESPACE.lastIndex;
  };
  const token = (re: RegExp): string | undefined => {
    re.lastIndex = at;
    const m = re.exec(text);
    if (!m) return undefined;
    at = re.lastIndex;
    return m[0];
  };
  const literal = (word: string, value: unknown) => {
    if (text.startsWith(word, at)) {
      at += word.length;
      return value;
    }
    return fail("an unexpected character");
  };
  const value = (depth: number): unknown => {
    if (depth > 64) fail("nesting deeper than 64");
    skip();
    const c = text[at];
    if (c === "{") {
      at++;
      const out: Record<string, unknown> = {};
      skip();
      if (text[at] === "}") return at++, out;
      for (;;) {
        skip();
        const key = token(STRING) ?? fail("an object key");
        skip();
        if (text[at++] !== ":") fail('a missing ":"');
        Object.defineProperty(out, JSON.parse(key) as string, { value: value(depth + 1), enumerable: true, writable: true, configurable: true });
        skip();
        const next = text[at++];
        if (next === "}") return out;
        if (next !== ",") fail('a missing "," or "}"');
      }
    }
    if (c === "[") {
      at++;
      const out: unknown[] = [];
      skip();
      if (text[at] === "]") return at++, out;
      for (;;) {
        out.push(value(depth + 1));
        skip();
        const next = text[at++];
        if (next === "]") return out;
        if (next !== ",") fail('a missing "," or "]"');
      }
    }
    if (c === '"') return JSON.parse(token(STRING) ?? fail("a malformed string")) as string;
    if (c === "t") return literal("true", true);
    if (c === "f") return literal("false", false);
    if (c === "n") return literal("null", null);
    const n = token(NUMBER);
    return n !== undefined ? new JsonNumberText(n) : fail("an unexpected character");
  };
  const result = value(0);
  skip();
  if (at !== text.length) fail("text after the value");
  return result;
}

/** A value from {@link parseJsonKeepingNumbers} with every number turned back into a JS number. */
export function plainJson(value: unknown): unknown {
  if (value instanceof JsonNumberText) return Number(value.text);
  if (Array.isArray(value)) return value.map(plainJson);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plainJson(v)]));
  return value;
}
