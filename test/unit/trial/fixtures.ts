/** Shared fixtures for the trial's prediction, reconciliation and verdict tests. */
import type { ProfileRow } from "../../../lib/profiling/store";
import { DEFAULT_TOLERANCE, type ReconcileInput } from "../../../lib/trial/reconcile";
import type { CounterSnapshot, EngineCounters, RequestRecord, TrialSummary } from "../../../lib/trial/types";

/**
 * A row whose figures are easy by hand: prefill 10 ms + 0.1 ms per token, decode interval 20 ms + 1 ms per
 * resident request (no KV term), measured up to 64 requests.
 */
export function row(iid: string, over: Partial<ProfileRow> = {}): ProfileRow {
  return {
    iid,
    ttft_a: 0,
    ttft_b: 0.0001,
    ttft_c: 0.01,
    tpot_slope: 0,
    tpot_intercept: 0.02,
    generation_digest: `sha256:${"a".repeat(64)}`,
    tpot_request_slope: 0.001,
    decode_min_requests: 1,
    decode_max_requests: 64,
    decode_min_kv_tokens: 1,
    decode_max_kv_tokens: 1_000_000,
    decode_fit_mape: 0.01,
    decode_cv_mape: 0.02,
    prefill_min_tokens: 16,
    prefill_max_tokens: 4096,
    decode_min_output_tokens: 1,
    decode_max_output_tokens: 1024,
    ...over,
  };
}

const STATS = ["mean", "median", "std", "p50", "p90", "p99"] as const;
const METRICS = ["ttft", "tpot", "itl", "e2el"] as const;

/** A summary with every field present (zeros) and the given ones set. */
export function summary(over: Partial<TrialSummary> = {}): TrialSummary {
  const base: Record<string, number> = {
    duration: 10,
    completed: 0,
    failed: 0,
    total_input_tokens: 0,
    total_output_tokens: 0,
    request_throughput: 0,
    request_goodput: 0,
    output_throughput: 0,
    total_token_throughput: 0,
    good: 0,
    good_fraction: 0,
    max_concurrent_requests: 0,
    achieved_send_rate: 0,
    p50_send_lag_ms: 0,
    p99_send_lag_ms: 0,
    max_send_lag_ms: 0,
    p99_event_loop_delay_ms: 0,
    max_event_loop_delay_ms: 0,
  };
  for (const s of STATS) for (const m of METRICS) base[`${s}_${m}_ms`] = 0;
  return { ...(base as unknown as TrialSummary), ...over };
}

/** The error `f` throws (its code and message); fails the test when it throws none. */
export function caught(f: () => unknown): { code?: string; message: string } {
  try {
    f();
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error("expected an error");
}

export function record(index: number, ok = true, completionTokens = 100): RequestRecord {
  return {
    index,
    requestId: `trial-p1-${index}`,
    promptTokens: 500,
    outputTokens: 100,
    dueS: index * 0.1,
    sentS: index * 0.1 + 0.001,
    ...(ok ? { firstTokenS: index * 0.1 + 0.09, usage: { promptTokens: 500, completionTokens }, finishReason: "length" } : { error: "HTTP 502: upstream" }),
    endS: index * 0.1 + 2.6,
    chunkGapsS: [],
    status: ok ? "ok" : "error",
  };
}

export const engine = (over: Partial<EngineCounters> = {}): EngineCounters => ({ processStart: 1764934171.62, success: {}, generationTokens: 0, promptTokens: 0, running: 0, waiting: 0, ...over });

/** Ten requests of 100 tokens through one prefill engine (p0) and two decode engines (d0, d1). */
export function clean(): ReconcileInput {
  const before: CounterSnapshot = {
    at: "before",
    engines: {
      p0: engine({ success: { length: 50, abort: 1 }, generationTokens: 50, promptTokens: 25000 }),
      d0: engine({ success: { stop: 20, length: 10 }, generationTokens: 3000, promptTokens: 15000 }),
      d1: engine({ success: { length: 20 }, generationTokens: 2000, promptTokens: 10000 }),
    },
    router: { offered: 50, served: 50, failed: 0, prefillAttempts: 50, decodeAttempts: 50 },
  };
  const after: CounterSnapshot = {
    at: "after",
    engines: {
      p0: engine({ success: { length: 60, abort: 1 }, generationTokens: 60, promptTokens: 30000 }),
      d0: engine({ success: { stop: 22, length: 14 }, generationTokens: 3600, promptTokens: 18000 }),
      d1: engine({ success: { length: 24 }, generationTokens: 2400, promptTokens: 12000 }),
    },
    router: { offered: 60, served: 60, failed: 0, prefillAttempts: 60, decodeAttempts: 60 },
  };
  return {
    records: Array.from({ length: 10 }, (_, i) => record(i)),
    summary: summary({ completed: 10, p99_send_lag_ms: 2, max_event_loop_delay_ms: 12, achieved_send_rate: 10 }),
    roles: { p0: "prefill", d0: "decode", d1: "decode" },
    direct: { before, after },
    prometheus: { before: structuredClone(before), after: structuredClone(after), problems: [] },
    tolerance: DEFAULT_TOLERANCE,
  };
}
