/**
 * The profiling driver's engine client over undici: one pool per engine sized for the largest cohort,
 * the API key as `Authorization: Bearer` on every request, streamed bodies timed as their bytes arrive.
 * undici is required at call time, never captured.
 */
import { performance } from "node:perf_hooks";
import type { EngineClient, Reply, StreamChunk } from "./client";
import { SseSplitter } from "./sse";
import { engineHeaders, notedStream, sendJson, timedOut } from "../engine/request";

export interface ProfileHttp extends EngineClient {
  close(): Promise<void>;
  /** Ends every connection at once, requests in flight included (a stalled engine is not waited for). */
  destroy(): Promise<void>;
}

export function profileHttp(baseUrl: string, apiKey: string | undefined, label: string, connections: number): ProfileHttp {
  const { Agent, request } = require("undici") as typeof import("undici");
  const agent = new Agent({ connections, keepAliveTimeout: 4000, connect: { timeout: 10_000 } });
  const headers = (json: boolean) => engineHeaders(apiKey, json);
  const fail = (method: string, path: string, err: unknown, t: number): Error => {
    const why = timedOut(err) ? `no answer within ${t} s` : (err as Error).message;
    // The cause keeps undici's code, so a lost connection can be told from a timeout (lib/engine/gone.ts).
    return Object.assign(new Error(`${method} ${path} on ${label}: ${why}`, { cause: err }), { name: "ProfileHttpError" });
  };
  const send = async (method: "GET" | "POST", path: string, body: unknown, t: number): Promise<Reply> => {
    try {
      const r = await sendJson(agent, `${baseUrl}${path}`, headers(body !== undefined), body, t, method);
      return { status: r.status, body: r.text };
    } catch (err) {
      throw fail(method, path, err, t);
    }
  };
  return {
    label,
    now: () => performance.now() / 1000,
    get: (path, t) => send("GET", path, undefined, t),
    post: (path, body, t) => send("POST", path, body, t),
    async stream(path, body, onChunk: (c: StreamChunk) => void, t) {
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(new Error(`no complete stream within ${t} s`)), t * 1000);
      try {
        const res = await notedStream(`${baseUrl}${path}`, request(`${baseUrl}${path}`, { method: "POST", headers: headers(true), body: JSON.stringify(body), dispatcher: agent, signal: abort.signal, headersTimeout: t * 1000, bodyTimeout: t * 1000 }));
        if (res.statusCode !== 200) return { status: res.statusCode, errorBody: await res.body.text() };
        const split = new SseSplitter();
        const utf8 = new TextDecoder();
        for await (const bytes of res.body as AsyncIterable<Uint8Array>) {
          const at = performance.now() / 1000;
          const text = utf8.decode(bytes, { stream: true });
          // An exception from the consumer ends the request: the loop exits and the body is destroyed.
          for (const event of split.feed(text)) onChunk({ at, event });
        }
        return { status: 200 };
      } catch (err) {
        if ((err as { code?: string }).code?.startsWith("NARWHAL_")) throw err;
        throw fail("POST", path, err, t);
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => agent.close(),
    destroy: () => agent.destroy(),
  };
}
