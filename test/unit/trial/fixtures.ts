/** Shared fixtures for the trial's prediction, reconciliation and verdict tests. */
import type { ProfileRow } from "../../../lib/profiling/store";
import type { TrialSummary } from "../../../lib/trial/types";

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
