/**
 * Log lines in vLLM's format, so that whoever tails a simulated engine's output (the host harness, the
 * Gate C log follower, a human) sees the same shapes as on a real host:
 *
 *   INFO 11-29 08:32:10 [kv_cache_utils.py:1087] GPU KV cache size: 1,234,560 tokens
 *
 * vLLM's default handler writes every level to stdout; startup failures end with a Python-style
 * exception line on stderr (see main.ts).
 */

type Level = "DEBUG" | "INFO" | "WARNING" | "ERROR";

function stamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function log(level: Level, source: string, message: string): void {
  process.stdout.write(`${level} ${stamp(new Date())} [${source}] ${message}\n`);
}

export const info = (source: string, message: string): void => log("INFO", source, message);
export const warn = (source: string, message: string): void => log("WARNING", source, message);
export const error = (source: string, message: string): void => log("ERROR", source, message);

/** Python's `f"{n:,}"` for integers. */
export function thousands(n: number): string {
  return Math.trunc(n).toLocaleString("en-US");
}

/** Python's `str(float)` for the values we print (0.92 -> "0.92", 1 -> "1.0"). */
export function pyFloat(x: number): string {
  if (Number.isInteger(x)) return x.toFixed(1);
  return String(x);
}
