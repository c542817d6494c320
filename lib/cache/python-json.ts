/**
 * Python's `json.dumps(value, sort_keys=True)` with its default settings, byte for byte: separators
 * `", "` and `": "`, keys sorted by code point at every level, `ensure_ascii` (every character outside
 * printable ASCII written as a lower-case `\uXXXX`, astral characters as surrogate pairs).
 *
 * The runbook's cache-signature script hashes exactly this text, so a signature computed here equals the
 * one an operator gets from the runbook. (lib/digest's `canonicalJson` has no spaces and is not the same
 * text.) Only JSON-shaped values are accepted; numbers must be safe integers, because Python prints
 * floats differently (`1.0`) and no signature input is fractional.
 */
export function pythonJsonDumps(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isSafeInteger(value)) throw new TypeError(`pythonJsonDumps: ${value} is not a safe integer; Python would print it differently`);
      return String(value);
    case "string":
      return pyString(value);
    case "object": {
      if (Array.isArray(value)) return "[" + value.map((v) => pythonJsonDumps(v)).join(", ") + "]";
      const entries = Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => codePointCompare(a, b));
      return "{" + entries.map(([k, v]) => `${pyString(k)}: ${pythonJsonDumps(v)}`).join(", ") + "}";
    }
    default:
      throw new TypeError(`pythonJsonDumps: a ${typeof value} has no JSON form`);
  }
}

export function pyString(s: string): string {
  // JSON.stringify already writes \" \\ \b \f \n \r \t and \u00XX for other control characters, as
  // Python does; ensure_ascii also escapes DEL and everything above it, one UTF-16 unit at a time.
  return JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

/** Python compares str by code point; JS `<` compares UTF-16 units (they differ only above U+FFFF). */
export function codePointCompare(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}
