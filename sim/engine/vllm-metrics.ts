/**
 * The metric families a vLLM 0.29-era API server exposes, wired to the simulator's state.
 */
import type { EngineArgs } from "./args";
import type { CacheGeometry } from "./geometry";
import { pyFloat } from "./log";
import {
  Counter,
  E2E_BUCKETS,
  Gauge,
  Histogram,
  Info,
  ITL_BUCKETS,
  NIXL_BYTES_BUCKETS,
  NIXL_TIME_BUCKETS,
  Registry,
  TTFT_BUCKETS,
} from "./metrics";

export interface LiveCounts {
  running: () => number;
  waiting: () => number;
  kvUsage: () => number;
}

/**
 * `vllm:cache_config_info`'s labels (v1/metrics/loggers.py `log_metrics_info`): every CacheConfig field
 * as str() of its Python value, in dataclass order, then `engine`. The front end copies num_gpu_blocks,
 * block_size, kv_cache_size_tokens and kv_cache_max_concurrency from the engine core's ready response;
 * kv_cache_layout is not copied, so the front end's own value, None, is what it shows.
 */
export function cacheConfigLabels(args: EngineArgs, g: CacheGeometry): Record<string, string> {
  const py = (b: boolean) => (b ? "True" : "False");
  return {
    block_size: String(g.blockSize),
    gpu_memory_utilization: pyFloat(args.gpuMemoryUtilization),
    kv_cache_memory_bytes: "None",
    swap_space: "4",
    cache_dtype: g.cacheDtype,
    is_attention_free: "False",
    num_gpu_blocks_override: "None",
    sliding_window: "None",
    enable_prefix_caching: py(args.enablePrefixCaching),
    prefix_caching_hash_algo: "sha256",
    cpu_offload_gb: "0",
    calculate_kv_scales: "False",
    kv_sharing_fast_prefill: "False",
    mamba_cache_dtype: "auto",
    mamba_ssm_cache_dtype: "auto",
    mamba_block_size: "None",
    kv_offloading_size: "None",
    kv_offloading_backend: "None",
    num_gpu_blocks: String(g.numGpuBlocks),
    num_cpu_blocks: "None",
    kv_cache_size_tokens: String(g.kvCacheSizeTokens),
    kv_cache_max_concurrency: pyFloat(g.maxConcurrency),
    kv_cache_layout: "None",
    engine: "0",
  };
}

export class EngineMetrics {
  private readonly registry = new Registry();
  readonly ttft: Histogram;
  readonly itl: Histogram;
  readonly tpot: Histogram;
  readonly e2e: Histogram;
  readonly promptTokens: Counter;
  readonly generationTokens: Counter;
  readonly requestSuccess: Counter;
  readonly nixlXferTime: Histogram;
  readonly nixlBytes: Histogram;
  readonly nixlFailed: Counter;

  constructor(modelName: string, args: EngineArgs, geometry: CacheGeometry, live: LiveCounts, processStartS: number) {
    const l = { engine: "0", model_name: modelName };
    const r = this.registry;
    // prometheus_client's process collector; absent in multiprocess mode (--api-server-count > 1).
    if (args.apiServerCount === 1) {
      r.add(new Gauge("process_resident_memory_bytes", "Resident memory size in bytes.", {}, () => process.memoryUsage().rss));
      r.add(new Gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", {}, () => processStartS));
      r.add(new Gauge("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", {}, () => {
        const u = process.cpuUsage();
        return (u.user + u.system) / 1e6;
      }, "counter"));
    }
    r.add(new Gauge("vllm:num_requests_running", "Number of requests in model execution batches.", l, live.running));
    r.add(new Gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", l, live.waiting));
    r.add(new Gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", l, live.kvUsage));
    this.promptTokens = r.add(new Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", l));
    this.generationTokens = r.add(new Counter("vllm:generation_tokens", "Number of generation tokens processed.", l));
    this.requestSuccess = r.add(new Counter("vllm:request_success", "Count of successfully processed requests.", l));
    this.ttft = r.add(new Histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", l, TTFT_BUCKETS));
    this.itl = r.add(new Histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", l, ITL_BUCKETS));
    this.tpot = r.add(new Histogram("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", l, ITL_BUCKETS));
    this.e2e = r.add(new Histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", l, E2E_BUCKETS));
    this.nixlXferTime = r.add(new Histogram("vllm:nixl_xfer_time_seconds", "Histogram of transfer duration for NIXL KV Cache transfers.", l, NIXL_TIME_BUCKETS));
    this.nixlBytes = r.add(new Histogram("vllm:nixl_bytes_transferred", "Histogram of bytes transferred per NIXL KV Cache transfers.", l, NIXL_BYTES_BUCKETS));
    this.nixlFailed = r.add(new Counter("vllm:nixl_num_failed_transfers", "Number of failed NIXL KV Cache transfers.", l));
    r.add(new Info("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", cacheConfigLabels(args, geometry)));
  }

  render(): string {
    return this.registry.render();
  }
}
