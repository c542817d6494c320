/**
 * The capacity trial's load client: one point, open loop. Every request is sent at its due time from
 * `arrivalSchedule` whether or not earlier ones have answered (no concurrency cap unless `connections`
 * sets one), as a streamed `/v1/completions` with exactly the point's prompt and output lengths, and timed
 * on the monotonic clock from the point's start. A request's failure is recorded, never thrown; the point
 * is bounded: no request outlives `trial.requestTimeoutS` from its send, and the whole point ends by the
 * last due time + `trial.requestTimeoutS` + POINT_BOUND_MARGIN_S. undici is required at call time.
 */
import { noteHttp } from "../evidence/http-journal";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import type { Pool } from "undici";
import { SseSplitter } from "../profiling/sse";
import { promptIds } from "./prompt";
import { arrivalSchedule } from "./schedule";
import { StreamRecorder } from "./stream-record";
import type { ClientRun, RequestRecord, ScheduledRequest, TrialPoint } from "./types";

export interface RunPointOptions {
  /** The router as the client reaches it, e.g. the local end of the SSH forward: `http://127.0.0.1:PORT`. */
  baseUrl: string;
  /** The model id sent in every request. */
  model: string;
  point: TrialPoint;
  /** Sent as `Authorization: Bearer` when given; never recorded. */
  apiKey?: string;
  /** The model's count of ordinary token ids; prompt ids are drawn from [100, vocabSize). */
  vocabSize: number;
  /** Bound on each request, from its send to the end of its stream (`trial.requestTimeoutS`). */
  requestTimeoutS: number;
  /** `x-request-id` is this prefix and the request's index; it also salts the prompts. */
  requestIdPrefix: string;
  /** Most sockets open at once; by default one per request, so no request ever waits for a socket. */
  connections?: number;
}

/** Slack past the last due time + `trial.requestTimeoutS` before the point stops whatever is still open. */
export const POINT_BOUND_MARGIN_S = 5;
/** The event-loop delay monitor's sampling interval; its samples include it, and it is subtracted. */
export const EVENT_LOOP_RESOLUTION_MS = 1;
/** Bound on closing the connection pool once every request has settled. */
const CLOSE_BOUND_MS = 2000;

export async function runPoint(o: RunPointOptions): Promise<ClientRun> {
  checkOptions(o);
  const schedule = arrivalSchedule(o.point);
  const url = new URL(o.baseUrl);
  const path = `${url.pathname.replace(/\/+$/, "")}/v1/completions`;
  const timeoutMs = o.requestTimeoutS * 1000;
  const connections = o.connections ?? o.point.requests;
  const { Pool } = require("undici") as typeof import("undici");
  const pool: Pool = new Pool(url.origin, {
    connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    connect: { timeout: Math.min(10_000, timeoutMs) },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  const headers = (index: number): Record<string, string> => ({
    "content-type": "application/json",
    accept: "text/event-stream",
    "x-request-id": `${o.requestIdPrefix}${index}`,
    ...(o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {}),
  });
  const body = (r: ScheduledRequest): string =>
    JSON.stringify({
      model: o.model,
      prompt: promptIds(r.promptTokens, o.vocabSize, o.requestIdPrefix, r.index),
      max_tokens: r.outputTokens,
      min_tokens: r.outputTokens,
      ignore_eos: true,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });

  const eld = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  eld.enable();
  const startWall = Date.now();
  const t0 = performance.now();
  const now = () => (performance.now() - t0) / 1000;
  const open = new Set<AbortController>();
  const boundS = schedule[schedule.length - 1].dueS + o.requestTimeoutS + POINT_BOUND_MARGIN_S;
  const boundReason = `the point passed its bound (last due + trial.requestTimeoutS ${o.requestTimeoutS} s + ${POINT_BOUND_MARGIN_S} s)`;

  const send = async (r: ScheduledRequest, payload: string): Promise<RequestRecord> => {
    const requestId = `${o.requestIdPrefix}${r.index}`;
    const abort = new AbortController();
    open.add(abort);
    let why: string | undefined;
    const timer = setTimeout(() => {
      why = `no complete reply within trial.requestTimeoutS (${o.requestTimeoutS} s)`;
      abort.abort(new Error(why));
    }, timeoutMs);
    const base = { index: r.index, requestId, promptTokens: r.promptTokens, outputTokens: r.outputTokens, dueS: r.dueS };
    const sentS = now();
    const rec = new StreamRecorder();
    let httpStatus: number | undefined;
    try {
      const res = await pool.request({ origin: url.origin, path, method: "POST", headers: headers(r.index), body: payload, signal: abort.signal });
      httpStatus = res.statusCode;
      if (res.statusCode !== 200) {
        const text = await res.body.text();
        const at = now();
        return { ...base, sentS, endS: at, chunkGapsS: [], status: "error", httpStatus, error: `HTTP ${res.statusCode}: ${text.slice(0, 200)}` };
      }
      const split = new SseSplitter();
      const utf8 = new TextDecoder();
      for await (const bytes of res.body as AsyncIterable<Uint8Array>) {
        const at = now();
        for (const e of split.feed(utf8.decode(bytes, { stream: true }))) rec.event(e, at);
      }
      return { ...base, sentS, httpStatus, ...rec.outcome(now()) };
    } catch (err) {
      const stopped = abort.signal.aborted ? (why ?? boundReason) : undefined;
      rec.fail(now(), stopped ?? connectionError(err));
      return { ...base, sentS, httpStatus, ...rec.outcome(now()) };
    } finally {
      clearTimeout(timer);
      open.delete(abort);
      // The point's record lists its completions as one command with a count per status (none: no answer).
      noteHttp({ method: "POST", url: `${url.origin}${path}`, status: httpStatus ?? null, startedAt: new Date(Date.now() - (now() - sentS) * 1000).toISOString(), endedAt: new Date().toISOString() });
    }
  };

  const pending: Array<Promise<RequestRecord>> = [];
  let bounded = false;
  const bound = setTimeout(() => {
    bounded = true;
    for (const a of open) a.abort(new Error(boundReason));
  }, boundS * 1000);
  await new Promise<void>((done) => {
    let i = 0;
    let next = body(schedule[0]);
    const tick = () => {
      // Every request already due goes now, in order: a late wake-up catches up rather than drifts.
      while (i < schedule.length && (schedule[i].dueS <= now() || bounded)) {
        const r = schedule[i];
        pending.push(bounded ? Promise.resolve(unsent(r, o.requestIdPrefix, now(), boundReason)) : send(r, next));
        i++;
        if (i < schedule.length) next = body(schedule[i]);
      }
      if (i >= schedule.length) return done();
      // Never wake early: a timer rounds to whole milliseconds.
      setTimeout(tick, Math.max(0, Math.ceil((schedule[i].dueS - now()) * 1000)));
    };
    setTimeout(tick, Math.max(0, Math.ceil(schedule[0].dueS * 1000)));
  });
  const records = await Promise.all(pending);
  clearTimeout(bound);
  const endWall = Date.now();
  const endS = now();
  eld.disable();
  await closePool(pool);
  return {
    start: { wallMs: startWall, monoS: 0 },
    end: { wallMs: endWall, monoS: endS },
    records,
    eventLoopDelayMs: eventLoopFigures(eld),
    settings: { arrival: o.point.arrival, seed: o.point.seed, requestTimeoutS: o.requestTimeoutS, connections },
  };
}

function unsent(r: ScheduledRequest, prefix: string, at: number, reason: string): RequestRecord {
  const base = { index: r.index, requestId: `${prefix}${r.index}`, promptTokens: r.promptTokens, outputTokens: r.outputTokens, dueS: r.dueS };
  return { ...base, sentS: at, endS: at, chunkGapsS: [], status: "error", error: `not sent: ${reason}` };
}

function connectionError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return `connection failed${e.code ? ` (${e.code})` : ""}: ${e.message ?? String(err)}`;
}

/** Graceful close once every request has settled; a socket that lingers past the bound is destroyed. */
async function closePool(pool: Pool): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), CLOSE_BOUND_MS)));
  try {
    if ((await Promise.race([pool.close().then(() => "closed" as const), late])) === "late") await pool.destroy();
  } finally {
    clearTimeout(timer);
  }
}

/** Delay beyond the sampling interval, ms; the histogram's samples are whole intervals. */
function eventLoopFigures(h: import("node:perf_hooks").IntervalHistogram): ClientRun["eventLoopDelayMs"] {
  if (h.count === 0) return { p50: 0, p99: 0, max: 0 };
  const ms = (ns: number) => Math.max(0, ns / 1e6 - EVENT_LOOP_RESOLUTION_MS);
  return { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) };
}

function checkOptions(o: RunPointOptions): void {
  const fail = (field: string, found: unknown, want: string) => {
    throw new Error(`load client: ${field} is ${JSON.stringify(found)}; it must be ${want}.`);
  };
  let url: URL | undefined;
  try {
    url = new URL(o.baseUrl);
  } catch {
    fail("baseUrl", o.baseUrl, "an http:// URL such as the local end of the SSH forward");
  }
  if (url && url.protocol !== "http:" && url.protocol !== "https:") fail("baseUrl", o.baseUrl, "an http:// or https:// URL");
  if (!o.model) fail("model", o.model, "the served model id");
  if (!(Number.isFinite(o.requestTimeoutS) && o.requestTimeoutS > 0)) fail("trial.requestTimeoutS", o.requestTimeoutS, "a number of seconds above 0");
  if (!(Number.isInteger(o.vocabSize) && o.vocabSize > 101)) fail("vocabSize", o.vocabSize, "the model's count of ordinary tokens, above 101");
  if (o.connections !== undefined && !(Number.isInteger(o.connections) && o.connections >= 1)) fail("connections", o.connections, "a whole number of at least 1");
}
