/**
 * An engine client that counts the completions the engine answered in full: the profile's own requests
 * in vLLM's finish counter (`vllm:request_success_total`), so its reservation witness can tell them from
 * the router's (lib/engine/reservation.ts). Health, tokenize and metrics reads are not requests vLLM
 * counts; a request that failed or was cut short is not counted either.
 */
import type { EngineClient } from "./client";

const COUNTED = new Set(["/v1/completions", "/v1/chat/completions"]);

export interface CountedClient extends EngineClient {
  /** Completions answered with 200 and read to their end so far. */
  finished(): number;
}

export function countedClient(c: EngineClient): CountedClient {
  let finished = 0;
  const count = (path: string, status: number) => {
    if (status === 200 && COUNTED.has(path)) finished++;
  };
  return {
    label: c.label,
    now: () => c.now(),
    get: (path, t) => c.get(path, t),
    async post(path, body, t) {
      const reply = await c.post(path, body, t);
      count(path, reply.status);
      return reply;
    },
    async stream(path, body, onChunk, t) {
      const reply = await c.stream(path, body, onChunk, t);
      count(path, reply.status);
      return reply;
    },
    finished: () => finished,
  };
}
