/**
 * Simulator-only HTTP routes under /sim/. They are not part of vLLM's API (a real engine answers 404),
 * so anything that reads them needs a real-engine path as well.
 *
 * - GET  /sim/truth         the latency ground truth this engine plays (coefficients, time scale), so
 *                            a profile fit can be compared with what it should have found;
 * - GET  /sim/cache-layout  the resolved KV cache geometry, what the runbook's capture-cache step reads
 *                            from a live engine (and the NIXL compatibility-hash inputs);
 * - POST /sim/dead          marks the engine dead or alive without killing it: body {"dead": true|false}
 *                            (default true). It requires the header `X-Narwhal-Sim: 1`, so a router or
 *                            proxy forwarding client traffic can never trip it by accident. SIGUSR2 toggles
 *                            the same state.
 */
import type { Engine } from "./engine";

export const SIM_HEADER = "x-narwhal-sim";

export function truthDocument(engine: Engine): Record<string, unknown> {
  const p = engine.parts;
  const scale = p.sim.timeScale;
  const effective = Object.fromEntries(Object.entries(p.coefficients).map(([k, v]) => [k, v * scale]));
  return {
    time_scale: scale,
    port: p.args.port,
    coefficients: p.coefficients,
    /** Coefficients as a wall clock measures them (× time_scale). */
    effective_coefficients: effective,
    formulas: {
      prefill_s: "prefillA*n^2 + prefillB*n + prefillC (n = input tokens; the first token comes with the prefill)",
      decode_step_s: "decodeBase + decodeKv*resident_kv_tokens + decodeReq*active_requests (one token per active request per step)",
    },
    scheduling: {
      max_num_seqs: p.maxNumSeqs,
      prefill: "one at a time, FIFO",
      decode: "one batch; sequences join at the next step boundary",
    },
    startup_delay_s: p.sim.startupDelayS,
    version: p.sim.version,
    pid: process.pid,
    process_start_time_seconds: p.processStartS,
    dead: engine.dead,
    engine_id: p.nixl?.engineId ?? null,
  };
}

export function cacheLayoutDocument(engine: Engine): Record<string, unknown> {
  const { geometry: g, model, args, platform, nixl, servedModelNames } = engine.parts;
  const kv = args.kvTransferConfig;
  return {
    model: model.path,
    served_model_name: servedModelNames,
    architecture: model.architecture,
    dtype: g.dtype,
    cache_dtype: g.cacheDtype,
    cache_dtype_bytes: g.cacheDtypeBytes,
    num_hidden_layers: g.numHiddenLayers,
    kv_layers: g.kvLayers,
    num_kv_heads: g.numKvHeads,
    num_kv_heads_per_rank: g.numKvHeadsPerRank,
    head_dim: g.headDim,
    tensor_parallel_size: g.tensorParallelSize,
    block_size: g.blockSize,
    num_gpu_blocks: g.numGpuBlocks,
    kv_cache_layout: g.kvCacheLayout,
    attention_backend: g.attentionBackend,
    use_mla: g.useMla,
    bytes_per_token_per_layer: g.bytesPerTokenPerLayer,
    page_size_bytes: g.pageSizeBytes,
    bytes_per_token: g.bytesPerToken,
    bytes_per_token_all_ranks: g.bytesPerToken * g.tensorParallelSize,
    available_kv_cache_bytes: g.availableKvCacheBytes,
    gpu_memory_utilization: args.gpuMemoryUtilization,
    max_model_len: g.maxModelLen,
    max_concurrency: g.maxConcurrency,
    hybrid: model.convSsm ? { kda_layers: model.convSsm.kdaLayers, short_conv_kernel_size: model.convSsm.shortConvKernelSize } : null,
    gpu: { product: platform.product, memory_gib: platform.memoryGiB, vendor: platform.vendor },
    visible_devices: platform.visibleDevices,
    visibility_env: platform.visibilitySource,
    kv_connector: kv?.kvConnector ?? null,
    kv_role: kv?.kvRole ?? null,
    engine_id: nixl?.engineId ?? null,
    side_channel: nixl ? { host: nixl.sideChannel.host, port: nixl.sideChannel.port } : null,
    compatibility_hash: nixl?.compatHash ?? null,
    hash_factors: nixl?.hashFactors ?? null,
  };
}
