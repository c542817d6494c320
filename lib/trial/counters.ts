/**
 * The counters a trial point reconciles with, read two ways: from an engine's or the router's own
 * `/metrics` (exact, taken just before the first send and after the drain), and from the stack's
 * Prometheus (instant queries by `iid`), which must agree with the first or the scrape failed.
 *
 * vLLM labels its series `model_name` and `engine` (one per data-parallel rank); an engine's figure is the
 * sum over them. The router's `narwhal_*` counters are unlabelled except `narwhal_failed_total{reason}`,
 * which has no sample at all until a request fails.
 */
import { EngineError } from "../engine/errors";
import { parsePrometheusText, processStartTime, type Sample } from "../engine/prometheus";
import { ENGINE_JOB, ROUTER_JOB } from "../observability/rules";
import type { CounterSnapshot, EngineCounters, RouterCounters } from "./types";

function sum(samples: readonly Sample[], name: string): number | undefined {
  const matching = samples.filter((s) => s.name === name);
  return matching.length ? matching.reduce((t, s) => t + s.value, 0) : undefined;
}

function required(samples: readonly Sample[], name: string, whose: string): number {
  const v = sum(samples, name);
  if (v === undefined) throw new EngineError("NARWHAL_METRICS_PARSE", `${whose} /metrics has no ${name} sample: is it the right port and version?`);
  return v;
}

/** An engine's counters from its `/metrics` body. `whose` names it in errors (its id and URL). */
export function engineCounters(text: string, whose = "engine"): EngineCounters {
  const samples = parsePrometheusText(text);
  const success: Record<string, number> = {};
  for (const s of samples) {
    if (s.name !== "vllm:request_success_total") continue;
    // prometheus_client renders an unlabelled 0 child before any labelled one exists; it carries nothing.
    const reason = s.labels.finished_reason;
    if (reason === undefined) {
      if (s.value !== 0) success.unknown = (success.unknown ?? 0) + s.value;
      continue;
    }
    success[reason] = (success[reason] ?? 0) + s.value;
  }
  const start = processStartTime(samples);
  return {
    ...(start !== undefined ? { processStart: start } : {}),
    success,
    generationTokens: required(samples, "vllm:generation_tokens_total", whose),
    promptTokens: required(samples, "vllm:prompt_tokens_total", whose),
    running: required(samples, "vllm:num_requests_running", whose),
    waiting: required(samples, "vllm:num_requests_waiting", whose),
  };
}

/** The router's counters from its `/metrics` body (narwhal.observability.metrics.traffic). */
export function routerCounters(text: string, whose = "router"): RouterCounters {
  const samples = parsePrometheusText(text);
  return {
    offered: required(samples, "narwhal_offered_total", whose),
    served: required(samples, "narwhal_served_total", whose),
    failed: sum(samples, "narwhal_failed_total") ?? 0,
    prefillAttempts: required(samples, "narwhal_prefill_attempts_total", whose),
    decodeAttempts: required(samples, "narwhal_decode_attempts_total", whose),
  };
}

const E = `job="${ENGINE_JOB}"`;
const R = `job="${ROUTER_JOB}"`;

/**
 * PromQL instant queries for the series a point reconciles with, evaluated at one instant (the query
 * API's `time`). Engine series are summed by `iid` (the label each engine's scrape target carries) and
 * so over vLLM's `engine` and `model_name`; the `up` and `timestamp(up)` queries say whether each target
 * answered its last scrape and when that scrape was.
 */
export const TRIAL_QUERIES = {
  success: `sum by (iid, finished_reason) (vllm:request_success_total{${E}})`,
  generationTokens: `sum by (iid) (vllm:generation_tokens_total{${E}})`,
  promptTokens: `sum by (iid) (vllm:prompt_tokens_total{${E}})`,
  running: `sum by (iid) (vllm:num_requests_running{${E}})`,
  waiting: `sum by (iid) (vllm:num_requests_waiting{${E}})`,
  processStart: `max by (iid) (process_start_time_seconds{${E}})`,
  engineUp: `max by (iid) (up{${E}})`,
  engineScrapedAt: `max by (iid) (timestamp(up{${E}}))`,
  routerOffered: `sum(narwhal_offered_total{${R}})`,
  routerServed: `sum(narwhal_served_total{${R}})`,
  routerFailed: `sum(narwhal_failed_total{${R}})`,
  routerPrefillAttempts: `sum(narwhal_prefill_attempts_total{${R}})`,
  routerDecodeAttempts: `sum(narwhal_decode_attempts_total{${R}})`,
  routerUp: `max(up{${R}})`,
  routerScrapedAt: `max(timestamp(up{${R}}))`,
} as const;

export type TrialQuery = keyof typeof TRIAL_QUERIES;

/** One series of an instant vector as the query API returns it: labels and `[unix seconds, "value"]`. */
export interface VectorSample {
  metric: Record<string, string>;
  value: [number, string];
}

/** The query API's reply body (`GET /api/v1/query`), or what could not be had instead. */
export type QueryReply = { status: "success"; data: { resultType: string; result: VectorSample[] } } | { status: "error"; errorType?: string; error?: string };

/**
 * A snapshot keyed by iid from the replies to every `TRIAL_QUERIES` entry. `iids` are the engines the
 * point expects; `scrapedAfterS` (unix seconds) is the instant each target must have been scraped at or
 * after, so the snapshot is not an older scrape's. Problems (a failed query, a target down or missing, no
 * scrape after the instant, a series absent) come back as sentences; the snapshot then holds only what
 * was read, and reconciliation counts them as failed scrapes.
 */
export function countersFromPrometheus(
  replies: Partial<Record<TrialQuery, QueryReply>>,
  o: { at: string; iids: readonly string[]; scrapedAfterS?: number },
): { snapshot: CounterSnapshot; problems: string[] } {
  const problems: string[] = [];
  const vectors = {} as Record<TrialQuery, VectorSample[]>;
  for (const key of Object.keys(TRIAL_QUERIES) as TrialQuery[]) {
    const reply = replies[key];
    if (!reply) {
      problems.push(`Prometheus query ${TRIAL_QUERIES[key]} got no reply`);
      vectors[key] = [];
    } else if (reply.status !== "success") {
      problems.push(`Prometheus query ${TRIAL_QUERIES[key]} failed: ${reply.errorType ?? "error"}: ${reply.error ?? "no message"}`);
      vectors[key] = [];
    } else if (reply.data.resultType !== "vector") {
      problems.push(`Prometheus query ${TRIAL_QUERIES[key]} returned a ${reply.data.resultType}, not an instant vector`);
      vectors[key] = [];
    } else vectors[key] = reply.data.result;
  }
  const value = (s: VectorSample): number => Number(s.value[1]);
  const byIid = (key: TrialQuery, iid: string): number | undefined => {
    const hit = vectors[key].find((s) => s.metric.iid === iid);
    return hit ? value(hit) : undefined;
  };
  const scalar = (key: TrialQuery): number | undefined => (vectors[key].length ? value(vectors[key][0]) : undefined);

  const engines: Record<string, EngineCounters> = {};
  for (const iid of o.iids) {
    const up = byIid("engineUp", iid);
    if (up === undefined) {
      problems.push(`Prometheus has no scrape target for engine ${iid} (job ${ENGINE_JOB})`);
      continue;
    }
    if (up !== 1) problems.push(`Prometheus target for engine ${iid} is down (up=${up})`);
    const scrapedAt = byIid("engineScrapedAt", iid);
    if (o.scrapedAfterS !== undefined && (scrapedAt === undefined || scrapedAt < o.scrapedAfterS)) {
      problems.push(`Prometheus has not scraped engine ${iid} since ${new Date(o.scrapedAfterS * 1000).toISOString()} (last scrape ${scrapedAt === undefined ? "unknown" : new Date(scrapedAt * 1000).toISOString()})`);
    }
    const generationTokens = byIid("generationTokens", iid);
    const promptTokens = byIid("promptTokens", iid);
    const running = byIid("running", iid);
    const waiting = byIid("waiting", iid);
    if (generationTokens === undefined || promptTokens === undefined || running === undefined || waiting === undefined) {
      problems.push(`Prometheus holds no vLLM token or request series for engine ${iid}`);
      continue;
    }
    const success: Record<string, number> = {};
    for (const s of vectors.success) if (s.metric.iid === iid) success[s.metric.finished_reason ?? "unknown"] = value(s);
    const processStart = byIid("processStart", iid);
    engines[iid] = { ...(processStart !== undefined ? { processStart } : {}), success, generationTokens, promptTokens, running, waiting };
  }

  let router: RouterCounters | undefined;
  const routerUp = scalar("routerUp");
  if (routerUp === undefined) problems.push(`Prometheus has no scrape target for the router (job ${ROUTER_JOB})`);
  else {
    if (routerUp !== 1) problems.push(`Prometheus target for the router is down (up=${routerUp})`);
    const scrapedAt = scalar("routerScrapedAt");
    if (o.scrapedAfterS !== undefined && (scrapedAt === undefined || scrapedAt < o.scrapedAfterS)) {
      problems.push(`Prometheus has not scraped the router since ${new Date(o.scrapedAfterS * 1000).toISOString()}`);
    }
    const offered = scalar("routerOffered");
    const served = scalar("routerServed");
    const prefillAttempts = scalar("routerPrefillAttempts");
    const decodeAttempts = scalar("routerDecodeAttempts");
    if (offered === undefined || served === undefined || prefillAttempts === undefined || decodeAttempts === undefined) {
      problems.push("Prometheus holds no narwhal_offered/served/prefill_attempts/decode_attempts series for the router");
    } else {
      // narwhal_failed_total has no sample until a request fails, so an empty sum is zero.
      router = { offered, served, failed: scalar("routerFailed") ?? 0, prefillAttempts, decodeAttempts };
    }
  }
  return { snapshot: { at: o.at, engines, ...(router ? { router } : {}) }, problems };
}
