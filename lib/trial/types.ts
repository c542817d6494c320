/**
 * The capacity trial's shapes (Gate G): a point's workload, what the load client records of each request,
 * the summary under `vllm bench serve`'s key names, the prediction from the stored profile fits, and the
 * reconciliation of the client's records with the router's and engines' own counters.
 */

/** One class of the workload mix: each of its requests sends exactly these lengths. */
export interface WorkloadClass {
  promptTokens: number;
  outputTokens: number;
  /** Relative share of the point's requests; the classes are drawn by weight with the point's seed. */
  weight: number;
}

/** A configured trial point (`trial.points[]`). */
export interface TrialPoint {
  id: string;
  /** Offered rate, requests per second (open loop: arrivals never wait for replies). */
  rate: number;
  requests: number;
  /** `poisson` (exponential gaps, vllm bench's default burstiness 1) or `constant` (gaps of 1/rate). */
  arrival: "poisson" | "constant";
  seed: number;
  mix: WorkloadClass[];
}

/** One planned request: when it is due, relative to the point's start, and what it asks for. */
export interface ScheduledRequest {
  index: number;
  /** Seconds after the point's start at which the request is due. */
  dueS: number;
  promptTokens: number;
  outputTokens: number;
}

/** What the client saw of one request. Times are monotonic seconds from the point's start. */
export interface RequestRecord {
  index: number;
  /** The `x-request-id` sent. */
  requestId: string;
  promptTokens: number;
  /** `max_tokens` asked (with `ignore_eos`, the tokens expected). */
  outputTokens: number;
  dueS: number;
  /** Just before the request was written: `sentS - dueS` is the client's send lag. */
  sentS: number;
  /** The first chunk carrying a choice. */
  firstTokenS?: number;
  /** The last chunk carrying a choice; for a failure, when it failed. */
  endS: number;
  /** Gaps between successive choice-bearing chunks (vllm bench's ITL pieces). */
  chunkGapsS: number[];
  /** From the usage chunk. */
  usage?: { promptTokens: number; completionTokens: number };
  finishReason?: string;
  status: "ok" | "error";
  httpStatus?: number;
  /** Why it failed: HTTP status and body head, a mid-stream error event, a timeout, a reset. */
  error?: string;
}

/** A (wall clock, monotonic clock) pair taken together, so client records can be placed on Prometheus' time. */
export interface ClockAnchor {
  wallMs: number;
  monoS: number;
}

/** One point as the client ran it. */
export interface ClientRun {
  start: ClockAnchor;
  end: ClockAnchor;
  records: RequestRecord[];
  /** The client process's event-loop delay during the point (perf_hooks.monitorEventLoopDelay), milliseconds. */
  eventLoopDelayMs: { p50: number; p99: number; max: number };
  /** Client settings kept in the manifest. */
  settings: { arrival: TrialPoint["arrival"]; seed: number; requestTimeoutS: number; connections: number };
}

/** The goodput SLO, seconds, inclusive (a request is good when every given bound holds). */
export interface TrialSlo {
  ttftS: number;
  tpotS: number;
}

/** mean_, median_, std_, p50_, p90_, p99_ for ttft, tpot, itl, e2el, in ms (`p99_ttft_ms` and so on): a mapped type, since an index signature cannot take a union of literals. */
export type TrialStatFields = Record<`${"mean" | "median" | "std" | "p50" | "p90" | "p99"}_${"ttft" | "tpot" | "itl" | "e2el"}_ms`, number>;

/**
 * The point's figures, under `vllm bench serve`'s key names (`p99_ttft_ms`, ...) so a `--save-result` JSON
 * diffs field by field, plus the client's own lag. Latency statistics are over successful requests only.
 */
export interface TrialSummary extends TrialStatFields {
  duration: number;
  completed: number;
  failed: number;
  total_input_tokens: number;
  total_output_tokens: number;
  request_throughput: number;
  request_goodput: number;
  output_throughput: number;
  total_token_throughput: number;
  /** Requests within the SLO, and their share of all requests sent. */
  good: number;
  good_fraction: number;
  max_concurrent_requests: number;
  /** requests / (last send - first send): the offered rate the client actually kept. */
  achieved_send_rate: number;
  p50_send_lag_ms: number;
  p99_send_lag_ms: number;
  max_send_lag_ms: number;
  p99_event_loop_delay_ms: number;
  max_event_loop_delay_ms: number;
}

/** What the stored profile fits predict at a point's offered rate. */
export interface Prediction {
  ttftS: number;
  tpotS: number;
  e2elS: number;
  /** Requests resident per decode engine (Little's law on the decode fit), and per prefill engine utilisation. */
  decodeRequestsPerEngine: number;
  prefillUtilisation: number;
}

/** The workload range the stored profiles cover, which a point must stay within. */
export interface ProfiledRange {
  promptTokens: [number, number];
  outputTokens: [number, number];
  /** The highest offered rate whose predicted decode batch stays within every decode row's measured requests. */
  maxRate: number;
}

/** The counters one engine, or the router, exposes, at one instant. */
export interface EngineCounters {
  /** `process_start_time_seconds`: a change means a restart, and a reset of every counter. */
  processStart?: number;
  /** `vllm:request_success_total` by `finished_reason`. */
  success: Record<string, number>;
  generationTokens: number;
  promptTokens: number;
  running: number;
  waiting: number;
}

export interface RouterCounters {
  offered: number;
  served: number;
  failed: number;
  prefillAttempts: number;
  decodeAttempts: number;
}

/** Counters of every engine (by id) and the router at one instant, from /metrics or from Prometheus. */
export interface CounterSnapshot {
  at: string;
  engines: Record<string, EngineCounters>;
  router?: RouterCounters;
}

/** Tolerances for reconciliation, stated in the docs and recorded with each point. */
export interface ReconcileTolerance {
  /** Client send lag (p99) beyond this is scheduler lag: the offered rate was not kept. */
  sendLagMs: number;
  /** Event-loop delay (max) beyond this is client saturation: the client's own timings are inflated. */
  eventLoopDelayMs: number;
  /** Relative disagreement allowed between the client's token totals and the engines' counters. */
  tokens: number;
}

export type TrialVerdict = "pass" | "slo-miss" | "unreconciled";

/** One comparison of the client's records with a server-side count. */
export interface ReconcileCheck {
  name: string;
  client: number;
  /** The server's figure; null when it could not be read. */
  server: number | null;
  ok: boolean;
  detail: string;
}

export interface Reconciliation {
  status: "reconciled" | "unreconciled";
  /** For `unreconciled`: each cause it can see, named first (`client saturation: ...`, `failed scrape: ...`). */
  causes: string[];
  checks: ReconcileCheck[];
  tolerance: ReconcileTolerance;
}

/** Measured against predicted: relative differences of median TTFT and TPOT, and whether either passes the bound. */
export interface Departure {
  ttft: number;
  tpot: number;
  bound: number;
  flagged: boolean;
}

/** A `load-trial` evidence record's observations: what the report and the deployment record read. */
export interface TrialObservations {
  point: TrialPoint;
  slo: TrialSlo;
  summary: TrialSummary;
  prediction: Prediction;
  departure: Departure;
  /** The prediction at rates from near zero to the range's maximum, for the report's curve. */
  predictedCurve: Array<{ rate: number; ttftS: number; tpotS: number }>;
  range: ProfiledRange;
  reconciliation: Reconciliation;
  verdict: TrialVerdict;
  reasons: string[];
}
