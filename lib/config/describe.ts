/**
 * Words for error messages: how a found value is shown, how choices are listed, which known key a typo
 * was probably meant to be, and the fallback wording for zod's own issue codes. Every message a user
 * can cause says what was found, what is allowed and, where there is one, the fix (style.md §5).
 */
import type { z } from "zod";

/** A found value as it appears in a message: strings quoted, long values cut, never more than one line. */
export function show(value: unknown): string {
  if (value === undefined) return "nothing";
  let text: string;
  try {
    text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  // NaN and Infinity stringify as null; say what they really are.
  if (typeof value === "number" && !Number.isFinite(value)) text = String(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

/** "a string", "a list", ... for the "found X, which is Y" half of a type error. */
export function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  switch (typeof value) {
    case "string":
      return "a string";
    case "number":
      return "a number";
    case "boolean":
      return "a boolean";
    case "object":
      return "an object";
    default:
      return typeof value;
  }
}

/** `a`, `a or b`, `a, b or c`. */
export function orList(items: readonly string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]}`;
}

/** `a`, `a and b`, `a, b and c`. */
export function andList(items: readonly string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}

/** Edit distance where swapping two neighbours counts as one edit ("prot" is 1 from "port"). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/**
 * The known word a typo most likely meant, or undefined when nothing is close. Case, `_` and `-` are
 * ignored first, so `ttft_s` finds `ttftS` and `Hosts` finds `hosts`.
 */
export function closest(word: string, known: readonly string[]): string | undefined {
  const fold = (s: string) => s.toLowerCase().replace(/[-_]/g, "");
  const exact = known.find((k) => fold(k) === fold(word));
  if (exact) return exact;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = editDistance(fold(word), fold(candidate));
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  // Short words are all close to each other: "b" is not a typo of "a".
  return bestDistance <= Math.max(1, Math.floor(word.length / 3)) && bestDistance < word.length ? best : undefined;
}

/** `; did you mean "x"?` or nothing. */
export function didYouMean(word: string, known: readonly string[]): string {
  const guess = closest(word, known);
  return guess ? `; did you mean "${guess}"?` : "";
}

/** The message for one key a strict object does not know. */
export function unknownKeyMessage(key: string, allowed: readonly string[]): string {
  const guess = closest(key, allowed);
  const hint = guess ? `did you mean "${guess}"? ` : "";
  return `unknown key; ${hint}allowed keys: ${allowed.join(", ")}`;
}

const EXPECTED: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "true or false",
  array: "a list",
  object: "an object",
  record: "an object",
};

/** A type error in the house style: missing, or found X (which is Y); then what was expected. */
export function typeMessage(input: unknown, expected: string): string {
  return input === undefined
    ? `missing; expected ${expected}`
    : `found ${show(input)}, which is ${kindOf(input)}; expected ${expected}`;
}

/**
 * Parse-level zod error map: the wording for any issue whose schema did not word it itself (field
 * helpers in fields.ts word almost all of them). `unrecognized_keys` is split per key later, where the
 * allowed keys are known.
 */
export function fallbackMessage(issue: z.core.$ZodRawIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return typeMessage(issue.input, EXPECTED[issue.expected] ?? String(issue.expected));
    case "invalid_value":
      return `found ${show(issue.input)}; allowed: ${orList(issue.values.map((v) => show(v)))}`;
    case "too_small":
      return `found ${show(issue.input)}; must be at least ${String(issue.minimum)}`;
    case "too_big":
      return `found ${show(issue.input)}; must be at most ${String(issue.maximum)}`;
    case "invalid_key":
      return issue.issues[0]?.message ?? `key ${show(issue.input)} is not allowed`;
    case "unrecognized_keys":
      return `unknown key(s): ${issue.keys.join(", ")}`;
    default:
      return `found ${show(issue.input)}; not allowed here`;
  }
}
