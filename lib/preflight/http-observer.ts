/**
 * The preflight's engine I/O over undici, as narwhal-check performs it: `/health` within the health
 * budget, `/version` + `/metrics` for the live identity, the sidecar's `/v1/attestation` (also read for
 * `launch.peer_release`, the colocated-restart warning), `/v1/models`,
 * one-token prefill pace probes, `/tokenize`, a KV handoff export (`kv_transfer_params`
 * `{do_remote_decode: true}`), and per pair a fresh handoff consumed with a fixed prompt whose first
 * token must arrive within `engine.first_token_timeout_s`. The API key goes as a Bearer header and
 * never into a message. The engines come at the URLs the provider routed (its SSH forwards through the
 * router host, dynamic-providers/preflight/routes.ts). undici is required at call time.
 */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { processStartTime, parsePrometheusText } from "../engine/prometheus";
import { attestationProblems } from "./attestation";
import { handoffOf, streamError } from "./outcome";
import type { Observer } from "./run";
import type { Probe } from "./pairs";
import type { TransferRecord } from "./transfer";
import { identityGenerationDigest } from "../profiling/store";
import { sseEvents, streamedTokens } from "../profiling/sse";
import { classifyEngineFailure, probeOver } from "../engine/gone";
import { engineHeaders, notedStream, sendJson, timedOut } from "../engine/request";

export const PROBE_PROMPT = "benchmark ".repeat(64);
export const PACE_PROMPT = "benchmark ".repeat(4096);
const PACE_REPEATS = 2;
const LOG_TAIL_BYTES = 4000;

export interface ObservedEngine {
  readonly iid: string;
  readonly url: string;
  readonly attestationUrl?: string;
  /** The attestation digest the Attestation resource accepted for this engine's generation. */
  readonly attestationDigest?: string;
}

export interface ObserverOptions {
  readonly engines: readonly ObservedEngine[];
  readonly model: string;
  readonly apiKey?: string;
  /** The fleet document's engine_contract, when declared. */
  readonly contract: Readonly<Record<string, unknown>> | null;
  readonly timeouts: { healthS: number; prefillS: number; tokenizeS: number; firstTokenS: number; decodeReadS: number; requestS: number; modelS?: number };
  /** The tail of an engine's log, where the deployment can read it. */
  readonly recentLogs?: (iid: string) => Promise<string>;
}

interface Reply {
  status: number;
  text: string;
}

class Timeout extends Error {}

export function httpObserver(o: ObserverOptions): Observer & { close(): Promise<void> } {
  const { Agent, request } = require("undici") as typeof import("undici");
  const agent = new Agent({ connections: 8, keepAliveTimeout: 4000, connect: { timeout: 10_000 } });
  const byId = new Map(o.engines.map((e) => [e.iid, e]));
  const engine = (iid: string) => {
    const e = byId.get(iid);
    if (!e) throw new Error(`preflight: no engine ${iid}`);
    return e;
  };
  const headers = (auth: boolean, json: boolean) => engineHeaders(auth ? o.apiKey : undefined, json);
  const describe = (err: unknown, t: number): string => {
    const e = err as Error & { code?: string };
    if (e instanceof Timeout || timedOut(e)) return `no answer within ${t} s`;
    return e.code ? `${e.code}: ${e.message}` : e.message;
  };
  const send = (url: string, body: unknown, t: number, auth = true): Promise<Reply> => sendJson(agent, url, headers(auth, body !== undefined), body, t);
  /** Each engine's process start as {@link identity} read it: a transfer cut by a restart names the engine as gone. */
  const starts = new Map<string, number>();
  /** A lost connection to an engine whose process is gone reads as that (lib/engine/gone.ts), else as it was. */
  const explain = async (err: unknown, e: ObservedEngine, t: number): Promise<string> => {
    const probe = probeOver(async (path) => {
      const r = await send(`${e.url}${path}`, undefined, o.timeouts.healthS);
      return { status: r.status, body: r.text };
    });
    const told = await classifyEngineFailure(err, { engineId: e.iid, during: "preflight transfer", probe, processStartTime: starts.get(e.iid) });
    return told === err ? describe(err, t) : (told as Error).message;
  };
  const identity = async (e: ObservedEngine): Promise<{ version: string; processStart: number }> => {
    const t = o.timeouts.healthS;
    const v = await send(`${e.url}/version`, undefined, t);
    if (v.status !== 200) throw new Error(`/version answered ${v.status}`);
    const version = (JSON.parse(v.text) as { version?: unknown }).version;
    if (typeof version !== "string") throw new Error("/version has no version");
    const m = await send(`${e.url}/metrics`, undefined, t);
    if (m.status !== 200) throw new Error(`/metrics answered ${m.status}`);
    const processStart = processStartTime(parsePrometheusText(m.text));
    if (processStart === undefined) throw new Error("/metrics has no process_start_time_seconds");
    starts.set(e.iid, processStart);
    return { version, processStart };
  };
  const attestation = async (e: ObservedEngine, live: { version: string; processStart: number }) => {
    if (!e.attestationUrl) return { problems: [`${e.iid} has no attestation_url`], attestationDigest: null, launchDigest: null };
    const r = await send(e.attestationUrl, undefined, o.timeouts.healthS, false);
    if (r.status !== 200) return { problems: [`attestation answered ${r.status}`], attestationDigest: null, launchDigest: null };
    return attestationProblems(r.text, o.contract!, live, e.attestationDigest);
  };
  const prefillLeg = async (e: ObservedEngine, body: Record<string, unknown>) => {
    const { min_tokens: _m, stream_options: _s, n: _n, best_of: _b, ...rest } = body;
    const started = performance.now();
    const r = await send(`${e.url}/v1/completions`, { ...rest, max_tokens: 1, stream: false, kv_transfer_params: { do_remote_decode: true } }, o.timeouts.prefillS);
    if (r.status !== 200) throw new Error(`prefill answered ${r.status}: ${r.text.slice(0, 200)}`);
    return { params: handoffOf(r.text), seconds: (performance.now() - started) / 1000 };
  };
  const logs = async (iid: string): Promise<string> => {
    if (!o.recentLogs) return "(no log source for this engine: its HTTP API serves no logs)";
    try {
      return (await o.recentLogs(iid)).slice(-LOG_TAIL_BYTES);
    } catch (err) {
      return `(log unavailable: ${(err as Error).message})`;
    }
  };

  return {
    async health(iid) {
      try {
        return (await send(`${engine(iid).url}/health`, undefined, o.timeouts.healthS)).status === 200;
      } catch {
        return false;
      }
    },
    async peerRelease(iid) {
      const e = engine(iid);
      if (!e.attestationUrl) return false;
      try {
        const r = await send(e.attestationUrl, undefined, o.timeouts.healthS, false);
        return r.status === 200 && (JSON.parse(r.text) as { launch?: { peer_release?: unknown } }).launch?.peer_release === true;
      } catch {
        return false;
      }
    },
    async contract(iid) {
      const e = engine(iid);
      try {
        const live = await identity(e);
        if (!o.contract) return { version: live.version, problems: [], processStart: live.processStart };
        const a = await attestation(e, live);
        return { version: live.version, problems: a.problems, processStart: live.processStart };
      } catch (err) {
        return { error: describe(err, o.timeouts.healthS) };
      }
    },
    async generation(iid) {
      const e = engine(iid);
      try {
        const live = await identity(e);
        if (!o.contract) return { digest: identityGenerationDigest(live.version, live.processStart) };
        const a = await attestation(e, live);
        if (a.problems.length) return { error: `attestation: ${a.problems.join("; ")}` };
        return { digest: a.launchDigest || a.attestationDigest! };
      } catch (err) {
        return { error: describe(err, o.timeouts.healthS) };
      }
    },
    async models(iid) {
      try {
        const r = await send(`${engine(iid).url}/v1/models`, undefined, o.timeouts.modelS ?? 15);
        const data = (JSON.parse(r.text) as { data?: unknown }).data;
        if (!Array.isArray(data)) throw new Error(`answered ${r.status} without data`);
        return data.map((m: { id: string }) => m.id);
      } catch (err) {
        return { error: describe(err, o.timeouts.modelS ?? 15) };
      }
    },
    async pace(iid) {
      const e = engine(iid);
      let best: { seconds: number; promptTokens?: number } | undefined;
      for (let i = 0; i < PACE_REPEATS; i++) {
        const started = performance.now();
        let r: Reply;
        try {
          r = await send(`${e.url}/v1/completions`, { model: o.model, prompt: PACE_PROMPT, max_tokens: 1, temperature: 0, stream: false, cache_salt: randomBytes(24).toString("base64url") }, o.timeouts.prefillS);
        } catch (err) {
          return { error: describe(err, o.timeouts.prefillS) };
        }
        const seconds = (performance.now() - started) / 1000;
        if (r.status !== 200) return { error: String(r.status) };
        if (!best || seconds < best.seconds) {
          let promptTokens: number | undefined;
          try {
            const n = (JSON.parse(r.text) as { usage?: { prompt_tokens?: unknown } }).usage?.prompt_tokens;
            if (Number.isInteger(n) && (n as number) > 0) promptTokens = n as number;
          } catch {
            promptTokens = undefined;
          }
          best = { seconds, promptTokens };
        }
      }
      return best!;
    },
    async tokenize(iid) {
      try {
        const r = await send(`${engine(iid).url}/tokenize`, { model: o.model, prompt: PROBE_PROMPT }, o.timeouts.tokenizeS);
        if (r.status !== 200) return { error: `answered ${r.status}` };
        const count = (JSON.parse(r.text) as { count?: unknown }).count;
        return Number.isInteger(count) ? (count as number) : 0;
      } catch (err) {
        return { error: describe(err, o.timeouts.tokenizeS) };
      }
    },
    async produce(iid) {
      try {
        const { params } = await prefillLeg(engine(iid), { model: o.model, prompt: PROBE_PROMPT, max_tokens: 1, temperature: 0 });
        return { parameters: Object.keys(params) };
      } catch (err) {
        return { error: describe(err, o.timeouts.prefillS) };
      }
    },
    async transfer(p: Probe): Promise<TransferRecord> {
      const src = engine(p.producer);
      const dst = engine(p.consumer);
      const attempt = { model: o.model, prompt: PROBE_PROMPT, max_tokens: 4, temperature: 0, min_tokens: 4, ignore_eos: true, cache_salt: randomBytes(24).toString("base64url") };
      let firstToken: number | null = null;
      let tokens = 0;
      const fail = async (failureKind: TransferRecord["failureKind"], error: string): Promise<TransferRecord> => ({
        ...p,
        status: "failed",
        firstTokenSeconds: firstToken,
        tokens,
        failureKind,
        error,
        logs: { producer: await logs(p.producer), consumer: await logs(p.consumer) },
      });
      const overall = AbortSignal.timeout(o.timeouts.requestS * 1000);
      let handoff: Record<string, unknown>;
      try {
        handoff = (await prefillLeg(src, attempt)).params;
      } catch (err) {
        return fail("transfer_failed", `prefill leg on ${p.producer}: ${await explain(err, src, o.timeouts.prefillS)}`);
      }
      const first = new AbortController();
      const firstTimer = setTimeout(() => first.abort(new Timeout("first token")), o.timeouts.firstTokenS * 1000);
      const started = performance.now();
      try {
        const res = await notedStream(`${dst.url}/v1/completions`, request(`${dst.url}/v1/completions`, {
          method: "POST",
          headers: headers(true, true),
          body: JSON.stringify({ ...attempt, stream: true, return_token_ids: true, stream_interval: 1, kv_transfer_params: handoff }),
          dispatcher: agent,
          signal: AbortSignal.any([overall, first.signal]),
          bodyTimeout: o.timeouts.decodeReadS * 1000,
        }));
        if (res.statusCode !== 200) {
          clearTimeout(firstTimer);
          return fail("transfer_failed", `decode leg on ${p.consumer} answered ${res.statusCode}: ${(await res.body.text()).slice(0, 300)}`);
        }
        for await (const event of sseEvents(res.body as AsyncIterable<Uint8Array>)) {
          if (event.done) continue;
          if (!("data" in event)) throw new Error(`malformed stream event: ${event.malformed}`);
          const json = event.data as { choices?: Array<{ text?: string; token_ids?: number[] }>; error?: unknown };
          // A mid-stream failure arrives as an error event, as vLLM's stream generators send it.
          if (json && json.error != null) {
            clearTimeout(firstTimer);
            return fail("transfer_failed", `decode leg on ${p.consumer}: ${streamError(json.error)}`);
          }
          const n = streamedTokens(json);
          tokens += n;
          if (n && firstToken === null) {
            firstToken = (performance.now() - started) / 1000;
            clearTimeout(firstTimer);
          }
        }
      } catch (err) {
        clearTimeout(firstTimer);
        if (first.signal.aborted && firstToken === null) return fail("deadline_exceeded", `no first token within ${o.timeouts.firstTokenS} s`);
        if (overall.aborted) return fail("request_deadline_exceeded", `no complete stream within ${o.timeouts.requestS} s`);
        return fail("transfer_failed", `decode leg on ${p.consumer}: ${await explain(err, dst, o.timeouts.decodeReadS)}`);
      }
      clearTimeout(firstTimer);
      if (!tokens) return fail("no_tokens", "consumer produced no tokens");
      return { ...p, status: "passed", firstTokenSeconds: firstToken, tokens };
    },
    close: () => agent.close(),
  };
}
