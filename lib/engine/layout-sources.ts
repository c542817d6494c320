/**
 * Where a live engine's per-rank cache layout comes from: only what a real vLLM 0.29 shows, read by the
 * cache-capture provider over the host's SSH session and HTTP (the provider does the I/O; this file and
 * the two it names are pure):
 *
 * | fact                                                    | source                                                        |
 * |---------------------------------------------------------|---------------------------------------------------------------|
 * | which ranks sized a cache; attention backend and layout | each rank's startup lines (startup-log.ts)                    |
 * | TP size                                                  | the API server's `non-default args` line (absent: the workers' ranks) |
 * | NIXL engine id                                           | each rank's `Initializing NIXL worker <id>`                   |
 * | block size, GPU blocks, cache dtype, capacity            | `/metrics` `vllm:cache_config_info` (cache-layout.ts)         |
 * | layers, KV heads, head size, MLA, dtype                  | the model's config.json and the plan's `--dtype` (model-kv.ts) |
 * | heads per rank, bytes per token, page size               | computed: `max(1, kv_heads // tp)` (1 for MLA) and vLLM's page formula |
 *
 * The engine's log is where the native runtime redirects it (`<runDir>/engine.log`; an adopted runbook
 * engine's `<run>/startup.log`), or `docker logs` of its container. The log must be the serving start's
 * own, whole from its first line (startup-log.ts refuses a rotated, truncated or foreign one), and its
 * capacity line must agree with the live `/metrics`.
 */
import type { CacheConfigFacts, CacheRankLayout, RankReport } from "./cache-layout";
import { EngineError } from "./errors";
import type { ModelKvGeometry } from "./model-kv";
import type { EngineStartup, LogOrigin } from "./startup-log";


/** Bytes per cached element: fp8 caches take one, `auto` the model dtype's. */
function cacheElementBytes(cacheDtype: string, modelDtype: string): number {
  if (/fp8/.test(cacheDtype)) return 1;
  const dtype = cacheDtype === "auto" ? modelDtype : cacheDtype;
  return dtype === "float32" ? 4 : 2;
}

/**
 * The log must be the live process's: its engine core's `GPU KV cache size: N tokens` is what the serving
 * front end reports as `kv_cache_size_tokens` (both come from the engine core's one sizing). Checked when
 * `/metrics` carries that label, as vLLM 0.29 does.
 */
export function checkStartupAgainstMetrics(startup: EngineStartup, config: CacheConfigFacts, origin: LogOrigin): void {
  const label = config.labels.kv_cache_size_tokens;
  if (label === undefined || !/^\d+$/.test(label) || Number(label) === startup.capacity.tokens) return;
  const detail =
    `the log says 'GPU KV cache size: ${startup.capacity.tokens.toLocaleString("en-US")} tokens', but the serving engine's /metrics ` +
    `has kv_cache_size_tokens="${label}": the log is not the serving process's (another start wrote it); nothing was captured`;
  throw new EngineError("NARWHAL_CACHE_LOG_ROTATED", `host ${origin.host}: ${origin.source}: ${detail}`, detail);
}

/**
 * One record per rank the log shows sized: backend and layout from its own lines, geometry from the
 * model and the cache config (vLLM sizes every rank alike, to the smallest), heads per rank computed.
 */
export function ranksFromEngineLog(startup: EngineStartup, model: ModelKvGeometry, config: CacheConfigFacts): RankReport {
  const tp = startup.tensorParallelSize;
  const bytes = cacheElementBytes(config.cacheDtype, model.dtype);
  const perRank = model.mla ? 1 : Math.max(1, Math.floor(model.numKvHeads / tp));
  const bytesPerTokenPerLayer = model.mla ? (model.mla.kvLoraRank + model.mla.qkRopeHeadDim) * bytes : 2 * perRank * model.headDim * bytes;
  const ranks = startup.ranks.map(
    (r): CacheRankLayout => ({
      rank: r.rank,
      blockSize: config.blockSize,
      numGpuBlocks: config.numGpuBlocks,
      numLayers: model.kvLayers,
      numKvHeads: model.numKvHeads,
      numKvHeadsPerRank: perRank,
      headSize: model.headDim,
      dtype: model.dtype,
      cacheDtype: config.cacheDtype,
      kvCacheLayout: r.kvCacheLayout,
      attentionBackend: r.attentionBackend,
      useMla: model.mla !== undefined,
      bytesPerTokenPerLayer,
      pageSizeBytes: bytesPerTokenPerLayer * config.blockSize,
      bytesPerToken: bytesPerTokenPerLayer * model.kvLayers,
    }),
  );
  const ids = [...new Set(startup.ranks.map((r) => r.nixlEngineId).filter((id): id is string => id !== null))];
  return { tensorParallelSize: tp, ranks, nixl: ids.length ? { engineId: ids.length === 1 ? ids[0] : null, compatibilityHash: null } : null };
}
