/**
 * The headers every engine client sends (the profile, preflight and calibration drivers and Gate C's
 * probes): the API key as `Authorization: Bearer` when set, and a JSON content type when a body goes
 * with the request; and the request itself, sent over the caller's undici pool within one named timeout and
 * noted for the step's commands. undici is required at call time, never captured.
 */
import type { Dispatcher } from "undici";
import { noteHttp } from "../evidence/http-journal";

/** What the measuring clients accept: JSON answers and the completions' event streams. */
export const MEASURE_ACCEPT = "application/json, text/event-stream, */*";
/** What Gate C's probes accept: JSON answers and `/metrics`' text exposition. */
export const PROBE_ACCEPT = "application/json, text/plain, */*";

/** `json` says a JSON body goes with the request. */
export function engineHeaders(apiKey: string | undefined, json: boolean, accept: string = MEASURE_ACCEPT): Record<string, string> {
  return {
    accept,
    ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
    ...(json ? { "content-type": "application/json" } : {}),
  };
}

export interface EngineReply {
  status: number;
  text: string;
}

/** `reset`: one connection for this request alone, never a pooled keep-alive socket. */
export interface SendOptions {
  readonly reset?: boolean;
}

/** A GET without a body, else a POST of the body as JSON; the whole reply within `timeoutS`. */
export async function sendJson(
  agent: Dispatcher,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  timeoutS: number,
  method: "GET" | "POST" = body === undefined ? "GET" : "POST",
  options: SendOptions = {},
): Promise<EngineReply> {
  const { request } = require("undici") as typeof import("undici");
  const startedAt = new Date().toISOString();
  try {
    const res = await request(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      dispatcher: agent,
      ...(options.reset ? { reset: true } : {}),
      signal: AbortSignal.timeout(timeoutS * 1000),
      headersTimeout: timeoutS * 1000,
      bodyTimeout: timeoutS * 1000,
    });
    const text = await res.body.text();
    noteHttp({ method, url, status: res.statusCode, startedAt, endedAt: new Date().toISOString(), body: text });
    return { status: res.statusCode, text };
  } catch (err) {
    noteHttp({ method, url, status: null, startedAt, endedAt: new Date().toISOString() });
    throw err;
  }
}

/**
 * A streamed POST, noted for the step's commands once its answer's head is in (its status) or it failed
 * without one (null). What the stream then carries is the caller's to judge.
 */
export async function notedStream<T extends { statusCode: number }>(url: string, sent: Promise<T>): Promise<T> {
  const startedAt = new Date().toISOString();
  try {
    const res = await sent;
    noteHttp({ method: "POST", url, status: res.statusCode, startedAt, endedAt: new Date().toISOString() });
    return res;
  } catch (err) {
    noteHttp({ method: "POST", url, status: null, startedAt, endedAt: new Date().toISOString() });
    throw err;
  }
}

/** Whether a request failed for want of an answer in time (abort signal or undici's own timeouts). */
export function timedOut(err: unknown): boolean {
  const e = err as Error & { code?: string };
  return e.name === "TimeoutError" || e.code === "UND_ERR_HEADERS_TIMEOUT" || e.code === "UND_ERR_BODY_TIMEOUT";
}
