/**
 * Calibration's instrumented direct-engine probes over undici, the preflight's transport: per sample a
 * fresh prefill on the producer (`kv_transfer_params {do_remote_decode: true}`) with an exact-length
 * token-id prompt and its own cache salt, then the streamed decode on the consumer with that handoff,
 * timed from starting the decode request to its first generated token under the diagnostic
 * observation bound. The API key goes as a Bearer header and never into a record. The engines come at
 * the URLs the provider routed (dynamic-providers/preflight/routes.ts); its record keeps this file as the probe code.
 *
 * The sampler also counts, per engine, the completions it had answered in full: the ones vLLM counts in
 * `vllm:request_success_total` (a prefill leg answered 200, a decode stream read to its end), and the
 * ones it gave up on (a timeout, the observation bound, a malformed or error event), which are aborted:
 * vLLM does not count those, but holds them until its next step. /tokenize, /version and /metrics are
 * no requests to it. Those counts and each engine's load (`load`) are what the calibration's
 * reservation is proved from (lib/engine/reservation.ts).
 */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { processStartTime, parsePrometheusText } from "../engine/prometheus";
import { loadOf, type EngineLoad } from "../engine/reservation";
import type { OwnRequests } from "../engine/settled-load";
import { handoffOf, streamError } from "./outcome";
import type { EngineIdentity } from "./calibration-outcome";
import type { Pair } from "./pairs";
import type { SampleRecord, Sampler } from "./calibration-run";
import { sseEvents, streamedTokens } from "../profiling/sse";
import { classifyEngineFailure, probeOver } from "../engine/gone";
import { engineHeaders, notedStream, sendJson, timedOut } from "../engine/request";

/** Text whose token ids seed every probe prompt, so each id is one the engine's own tokenizer made. */
export const SEED_TEXT = "calibration probe benchmark ".repeat(8);

export interface SamplerOptions {
  readonly engines: ReadonlyArray<{ iid: string; url: string }>;
  readonly model: string;
  readonly apiKey?: string;
  readonly timeouts: { readonly healthS: number; readonly prefillS: number; readonly tokenizeS: number; readonly observationBoundS: number; readonly requestS: number };
}

class Expired extends Error {}

/** The calibration's own reads of an engine beside its samples. */
export interface EngineReads {
  identity(iid: string): Promise<EngineIdentity>;
  /** The engine's load from its `/metrics`; throws naming the engine when it cannot be read. */
  load: (iid: string) => Promise<EngineLoad>;
  /** The sampler's completions this engine answered in full so far, and those the sampler gave up on there. */
  ownRequests: (iid: string) => OwnRequests;
}

export function httpSampler(o: SamplerOptions): Sampler & EngineReads & { close(): Promise<void> } {
  const { Agent, request } = require("undici") as typeof import("undici");
  const agent = new Agent({ connections: 4, keepAliveTimeout: 4000, connect: { timeout: 10_000 } });
  const byId = new Map(o.engines.map((e) => [e.iid, e]));
  const seeds = new Map<string, number[]>();
  const finishes = new Map<string, number>();
  const abandons = new Map<string, number>();
  const answered = (iid: string) => finishes.set(iid, (finishes.get(iid) ?? 0) + 1);
  const abandoned = (iid: string) => abandons.set(iid, (abandons.get(iid) ?? 0) + 1);
  const url = (iid: string) => {
    const e = byId.get(iid);
    if (!e) throw new Error(`calibration: no engine ${iid}`);
    return e.url;
  };
  const headers = (json: boolean) => engineHeaders(o.apiKey, json);
  const send = (target: string, body: unknown, t: number) => sendJson(agent, target, headers(body !== undefined), body, t);
  const describe = (err: unknown, t: number): string => {
    const e = err as Error & { code?: string };
    if (timedOut(e)) return `no answer within ${t} s`;
    return e.code ? `${e.code}: ${e.message}` : e.message;
  };
  /** Each engine's process start from {@link identity}: a sample cut by a restart names the engine as gone. */
  const starts = new Map<string, number | null>();
  /** A lost connection to an engine whose process is gone reads as that (lib/engine/gone.ts), else as it was. */
  const explain = async (err: unknown, iid: string, t: number): Promise<string> => {
    const probe = probeOver(async (path) => {
      const r = await send(`${url(iid)}${path}`, undefined, o.timeouts.healthS);
      return { status: r.status, body: r.text };
    });
    const told = await classifyEngineFailure(err, { engineId: iid, during: "calibration", probe, processStartTime: starts.get(iid) });
    return told === err ? describe(err, t) : (told as Error).message;
  };
  const tokenize = async (iid: string) => {
    const r = await send(`${url(iid)}/tokenize`, { model: o.model, prompt: SEED_TEXT }, o.timeouts.tokenizeS);
    if (r.status !== 200) throw new Error(`${iid} /tokenize answered ${r.status}: ${r.text.slice(0, 200)}`);
    return JSON.parse(r.text) as { tokens?: unknown; max_model_len?: unknown };
  };
  /** Exactly n prompt tokens: the seed ids repeated; the cache salt keeps every sample a cold prefill. */
  const prompt = async (iid: string, n: number): Promise<number[]> => {
    let ids = seeds.get(iid);
    if (!ids) {
      const t = (await tokenize(iid)).tokens;
      if (!Array.isArray(t) || !t.length || !t.every((x) => Number.isInteger(x))) throw new Error(`${iid} /tokenize returned no token ids; exact input sizing needs them`);
      ids = t as number[];
      seeds.set(iid, ids);
    }
    return Array.from({ length: n }, (_, i) => ids[i % ids.length]);
  };

  return {
    async identity(iid) {
      const t = o.timeouts.healthS;
      let maxModelLen: number | null;
      let version: string | null = null;
      let processStart: number | null = null;
      try {
        const m = (await tokenize(iid)).max_model_len;
        maxModelLen = Number.isInteger(m) ? (m as number) : null;
      } catch {
        maxModelLen = null;
      }
      try {
        const v = await send(`${url(iid)}/version`, undefined, t);
        if (v.status === 200) version = String((JSON.parse(v.text) as { version?: unknown }).version ?? "") || null;
        const m = await send(`${url(iid)}/metrics`, undefined, t);
        if (m.status === 200) processStart = processStartTime(parsePrometheusText(m.text)) ?? null;
      } catch {
        // An engine that does not answer has no identity to record; the run's check says so.
      }
      starts.set(iid, processStart);
      return { iid, maxModelLen, version, processStart };
    },

    load: async (iid) => {
      const r = await send(`${url(iid)}/metrics`, undefined, o.timeouts.healthS).catch((err: unknown) => {
        throw new Error(`${iid} /metrics: ${describe(err, o.timeouts.healthS)}`);
      });
      if (r.status !== 200) throw new Error(`${iid} /metrics answered ${r.status}: ${r.text.slice(0, 200)}`);
      return loadOf(r.text, iid);
    },

    ownRequests: (iid) => ({ own: finishes.get(iid) ?? 0, abandoned: abandons.get(iid) ?? 0 }),

    async sample(p: Pair, inputTokens: number, attempt: number): Promise<SampleRecord> {
      const at = new Date().toISOString();
      const base = { producer: p.producer, consumer: p.consumer, inputTokens, attempt, at };
      let promptTokens: number | null = null;
      let prefillSeconds: number | null = null;
      const failed = (failure: SampleRecord["failure"], error: string, firstTokenSeconds: number | null = null): SampleRecord => ({ ...base, status: "failed", promptTokens, prefillSeconds, firstTokenSeconds, failure, error });
      const body = { model: o.model, temperature: 0, ignore_eos: true, cache_salt: randomBytes(24).toString("base64url") };
      let handoff: Record<string, unknown>;
      // The decode leg resends the same prompt; the ids are the producer's tokenizer's, which the engine contract makes the consumer's too.
      let ids: number[];
      // Whether the engine may hold a request of ours that got no answer (see ownRequests).
      let held = false;
      try {
        ids = await prompt(p.producer, inputTokens);
        const started = performance.now();
        held = true;
        const r = await send(`${url(p.producer)}/v1/completions`, { ...body, prompt: ids, max_tokens: 1, stream: false, kv_transfer_params: { do_remote_decode: true } }, o.timeouts.prefillS);
        held = false;
        prefillSeconds = (performance.now() - started) / 1000;
        if (r.status !== 200) return failed("prefill_failed", `prefill on ${p.producer} answered ${r.status}: ${r.text.slice(0, 300)}`);
        // A non-streamed completion is answered once the engine has finished it.
        answered(p.producer);
        const n = (JSON.parse(r.text) as { usage?: { prompt_tokens?: unknown } }).usage?.prompt_tokens;
        promptTokens = Number.isInteger(n) ? (n as number) : null;
        handoff = handoffOf(r.text);
      } catch (err) {
        if (held) abandoned(p.producer);
        return failed("prefill_failed", `prefill on ${p.producer}: ${await explain(err, p.producer, o.timeouts.prefillS)}`);
      }
      const bound = new AbortController();
      const timer = setTimeout(() => bound.abort(new Expired("observation bound")), o.timeouts.observationBoundS * 1000);
      const started = performance.now();
      let firstToken: number | null = null;
      let tokens = 0;
      held = true;
      try {
        const res = await notedStream(`${url(p.consumer)}/v1/completions`, request(`${url(p.consumer)}/v1/completions`, {
          method: "POST",
          headers: headers(true),
          body: JSON.stringify({ ...body, prompt: ids, max_tokens: 1, min_tokens: 1, stream: true, return_token_ids: true, kv_transfer_params: handoff }),
          dispatcher: agent,
          signal: AbortSignal.any([bound.signal, AbortSignal.timeout(o.timeouts.requestS * 1000)]),
        }));
        if (res.statusCode !== 200) {
          held = false;
          return failed("engine_error", `decode on ${p.consumer} answered ${res.statusCode}: ${(await res.body.text()).slice(0, 300)}`);
        }
        for await (const event of sseEvents(res.body as AsyncIterable<Uint8Array>)) {
          if (event.done) continue;
          if (!("data" in event)) return failed("engine_error", `decode on ${p.consumer}: malformed stream event`);
          const json = event.data as { choices?: Array<{ text?: string; token_ids?: number[] }>; error?: unknown };
          if (json && json.error != null) return failed("engine_error", `decode on ${p.consumer}: ${streamError(json.error)}`, firstToken);
          const k = streamedTokens(json);
          tokens += k;
          if (k && firstToken === null) {
            firstToken = (performance.now() - started) / 1000;
            clearTimeout(timer);
          }
        }
        // The stream ran to its end: the engine finished the decode leg.
        held = false;
        answered(p.consumer);
      } catch (err) {
        if (bound.signal.aborted && firstToken === null) return failed("observation_expired", `no first token from ${p.consumer} within the ${o.timeouts.observationBoundS} s observation bound`);
        return failed("engine_error", `decode on ${p.consumer}: ${await explain(err, p.consumer, o.timeouts.requestS)}`, firstToken);
      } finally {
        clearTimeout(timer);
        if (held) abandoned(p.consumer);
      }
      if (!tokens || firstToken === null) return failed("no_tokens", `${p.consumer} accepted the handoff and produced no tokens`);
      return { ...base, status: "completed", promptTokens, prefillSeconds, firstTokenSeconds: firstToken };
    },

    close: () => agent.close(),
  };
}
