/**
 * How Pulumi marks a secret inside a state or event value: an object carrying its signature key. The
 * report masks it (`ciphertext` or `value` beside the signature); a script reading `stack export
 * --show-secrets` reveals it (`plaintext`, the value's JSON).
 */
const SECRET_SIG = "4dabf18193072939515e22adb298388d";
const SECRET_SIG_VALUE = "1b47061264138c4ac30d75fd1eb44270";

export function isSecret(v: unknown): boolean {
  return !!v && typeof v === "object" && (v as Record<string, unknown>)[SECRET_SIG] === SECRET_SIG_VALUE;
}

/** A value from `stack export --show-secrets` with every secret replaced by its plaintext value. */
export function revealed(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(revealed);
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (isSecret(o) && typeof o.plaintext === "string") return revealed(JSON.parse(o.plaintext));
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, revealed(x)]));
  }
  return v;
}
