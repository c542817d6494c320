/**
 * `.env` values as the runbook's tools read them: comma lists, JSON arrays and objects, numbers, URLs.
 * Each reader returns the value or a problem worded for the key it came from; values are never echoed
 * (a `.env` holds secrets next to plain fields, and a misplaced one must not reach a log).
 */

export type Read<T> = { ok: true; value: T } | { ok: false; problem: string };

const ok = <T>(value: T): Read<T> => ({ ok: true, value });
const bad = <T>(problem: string): Read<T> => ({ ok: false, problem });

export function readInt(text: string, what: string): Read<number> {
  return /^\d+$/.test(text.trim()) ? ok(Number(text.trim())) : bad(`expected ${what} (a whole number)`);
}

export function readNumber(text: string, what: string): Read<number> {
  const n = Number(text.trim());
  return text.trim() !== "" && Number.isFinite(n) ? ok(n) : bad(`expected ${what} (a number)`);
}

export function readList(text: string): string[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

/** GPU indices; NVIDIA UUIDs are legal in the runbook but this program allocates by index. */
export function readGpuIds(text: string): Read<number[]> {
  const items = readList(text);
  if (items.length === 0) return bad("expected a comma-separated list of GPU indices, e.g. 0,1");
  if (items.some((s) => /^GPU-/i.test(s))) return bad("lists NVIDIA GPU UUIDs; this program allocates GPUs by index: write the indices nvidia-smi shows for them");
  if (!items.every((s) => /^\d+$/.test(s))) return bad("expected a comma-separated list of GPU indices, e.g. 0,1");
  return ok(items.map(Number));
}

export function readJsonArray(text: string): Read<string[]> {
  try {
    const v = JSON.parse(text) as unknown;
    if (Array.isArray(v) && v.every((x) => typeof x === "string")) return ok(v);
  } catch {
    /* worded below */
  }
  return bad('expected a JSON array of strings, e.g. ["--max-num-batched-tokens","8192"]');
}

export function readJsonObject(text: string): Read<Record<string, string>> {
  try {
    const v = JSON.parse(text) as unknown;
    if (v && typeof v === "object" && !Array.isArray(v) && Object.values(v).every((x) => typeof x === "string")) return ok(v as Record<string, string>);
  } catch {
    /* worded below */
  }
  return bad('expected a JSON object of string values, e.g. {"VLLM_LOGGING_LEVEL":"DEBUG"}');
}

export interface HttpEndpoint {
  host: string;
  port: number;
  path: string;
}

/** An `http://host:port[/path]` URL with its port written out (the runbook always writes one). */
export function readHttpUrl(text: string): Read<HttpEndpoint> {
  let u: URL;
  try {
    u = new URL(text.trim());
  } catch {
    return bad("expected an http://<address>:<port> URL");
  }
  if (u.protocol !== "http:") return bad(`expected an http:// URL, found ${u.protocol.replace(/:$/, "")}://`);
  if (u.username || u.password) return bad("the URL carries credentials; engines are reached without them");
  if (!u.port) return bad("expected the URL to name its port, e.g. http://10.0.0.5:8100");
  return ok({ host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port), path: u.pathname.replace(/\/+$/, "") });
}
