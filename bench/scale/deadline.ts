import type { Stack } from "@pulumi/pulumi/automation";

/**
 * Runs one stack operation against a named deadline: on expiry the operation is cancelled and the error
 * names the phase and its bound (`<PHASE>_TIMEOUT`), so a benchmark never hangs on a stuck run.
 */
export async function withDeadline<T>(phase: string, stack: Stack, limitMs: number, op: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void stack.cancel().catch(() => undefined);
      reject(new Error(`${phase}: no result within ${limitMs / 60_000} min (${phase.toUpperCase().replace(/\W+/g, "_")}_TIMEOUT)`));
    }, limitMs);
  });
  try {
    return await Promise.race([op(), expiry]);
  } finally {
    clearTimeout(timer);
  }
}
