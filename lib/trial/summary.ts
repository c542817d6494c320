/**
 * A point's summary, computed as `vllm bench serve`'s calculate_metrics does: only successful requests
 * enter the latency lists and token totals; every rate is over `duration`, from the point's start until
 * the last request ended (failures included, as vllm bench waits for every task); statistics are numpy's
 * mean, median, population std and linear-interpolation percentiles, in ms, 0 for an empty list. Added to
 * vllm bench's figures: the client's send lag, its achieved send rate and its event-loop delay.
 */
import type { ClientRun, RequestRecord, TrialSlo, TrialSummary } from "./types";

/** numpy.percentile's default (linear) over an ascending list; 0 for an empty one. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const h = ((sorted.length - 1) * p) / 100;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
}

const mean = (xs: readonly number[]) => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length);

/** numpy.std: the population standard deviation. */
function std(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / xs.length);
}

type Metric = "ttft" | "tpot" | "itl" | "e2el";
type Stat = "mean" | "median" | "std" | "p50" | "p90" | "p99";

function stats<M extends Metric>(metric: M, seconds: readonly number[]): Record<`${Stat}_${M}_ms`, number> {
  const ms = seconds.map((s) => s * 1000).sort((a, b) => a - b);
  return {
    [`mean_${metric}_ms`]: mean(ms),
    [`median_${metric}_ms`]: percentile(ms, 50),
    [`std_${metric}_ms`]: std(ms),
    [`p50_${metric}_ms`]: percentile(ms, 50),
    [`p90_${metric}_ms`]: percentile(ms, 90),
    [`p99_${metric}_ms`]: percentile(ms, 99),
  } as Record<`${Stat}_${M}_ms`, number>;
}

/** Output tokens of a success: the usage chunk's count, else (no usage chunk) one per choice-bearing chunk. */
export function completionTokens(r: RequestRecord): number {
  return r.usage?.completionTokens ?? r.chunkGapsS.length + (r.firstTokenS === undefined ? 0 : 1);
}

/** vllm bench's TPOT: decode time per token after the first; 0 for n <= 1 (it then enters no TPOT list). */
export function tpotS(r: RequestRecord): number {
  const n = completionTokens(r);
  return n > 1 ? (r.endS - r.sentS - ((r.firstTokenS ?? r.sentS) - r.sentS)) / (n - 1) : 0;
}

/** The exact peak of overlapping [sent, end) intervals: an end at the same instant as a start frees its slot first. */
export function maxConcurrent(records: readonly RequestRecord[]): number {
  const edges: Array<[number, number]> = [];
  for (const r of records) edges.push([r.sentS, 1], [r.endS, -1]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let peak = 0;
  for (const [, d] of edges) peak = Math.max(peak, (now += d));
  return peak;
}

/**
 * Requests over the span of their sends, N / (last send - first send), as the fact sheet defines it. With
 * one request, or every send at one instant, there is no span: the send time from the point's start is
 * used instead (the schedule's first request is due one gap after the start), and 0 without any send.
 */
export function achievedSendRate(records: readonly RequestRecord[]): number {
  if (records.length === 0) return 0;
  const sent = records.map((r) => r.sentS);
  const first = Math.min(...sent);
  const last = Math.max(...sent);
  if (last > first) return records.length / (last - first);
  return last > 0 ? records.length / last : 0;
}

export function summarise(run: ClientRun, slo: TrialSlo): TrialSummary {
  const all = run.records;
  const ok = all.filter((r) => r.status === "ok");
  const duration = all.reduce((d, r) => Math.max(d, r.endS), 0);
  const per = (x: number) => (duration > 0 ? x / duration : 0);
  const input = ok.reduce((s, r) => s + (r.usage?.promptTokens ?? r.promptTokens), 0);
  const output = ok.reduce((s, r) => s + completionTokens(r), 0);
  const ttfts = ok.map((r) => (r.firstTokenS ?? r.endS) - r.sentS);
  const tpots = ok.filter((r) => completionTokens(r) > 1).map(tpotS);
  const good = ok.filter((r) => (r.firstTokenS ?? r.endS) - r.sentS <= slo.ttftS && tpotS(r) <= slo.tpotS).length;
  const lags = all.map((r) => (r.sentS - r.dueS) * 1000).sort((a, b) => a - b);
  return {
    duration,
    completed: ok.length,
    failed: all.length - ok.length,
    total_input_tokens: input,
    total_output_tokens: output,
    request_throughput: per(ok.length),
    request_goodput: per(good),
    output_throughput: per(output),
    total_token_throughput: per(input + output),
    good,
    good_fraction: all.length > 0 ? good / all.length : 0,
    max_concurrent_requests: maxConcurrent(ok),
    achieved_send_rate: achievedSendRate(all),
    ...stats("ttft", ttfts),
    ...stats("tpot", tpots),
    ...stats("itl", ok.flatMap((r) => r.chunkGapsS)),
    ...stats("e2el", ok.map((r) => r.endS - r.sentS)),
    p50_send_lag_ms: percentile(lags, 50),
    p99_send_lag_ms: percentile(lags, 99),
    max_send_lag_ms: lags.length > 0 ? lags[lags.length - 1] : 0,
    p99_event_loop_delay_ms: run.eventLoopDelayMs.p99,
    max_event_loop_delay_ms: run.eventLoopDelayMs.max,
  };
}
