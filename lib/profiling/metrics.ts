/**
 * What profiling reads from an engine's `/metrics` (vLLM's families, as narwhal's vLLM backend reads
 * them): the process identity, the KV capacity, the cache block size and the prefix-cache hit counter.
 */
export interface EngineMetricFacts {
  processStartTime: number | null;
  kvCapacityTokens: number | null;
  blockTokens: number | null;
  prefixCacheHits: number | null;
}

export function metricFacts(text: string): EngineMetricFacts {
  const start = /^process_start_time_seconds(?:\{[^}]*\})?\s+([0-9.eE+-]+)\s*$/m.exec(text);
  const capacities = [...text.matchAll(/kv_cache_size_tokens="([0-9]+(?:\.[0-9]+)?)"/g)].map((m) => Math.trunc(Number(m[1])));
  const blocks = new Set([...text.matchAll(/^vllm:cache_config_info\{[^}]*\bblock_size="([0-9]+)"/gm)].map((m) => Number(m[1])));
  const hits = [...text.matchAll(/^vllm:prefix_cache_hits_total(?:\{[^}]*\})?\s+([0-9.eE+-]+)/gm)].map((m) => Number(m[1]));
  const block = blocks.size === 1 ? [...blocks][0] : null;
  return {
    processStartTime: start ? Number(start[1]) : null,
    kvCapacityTokens: capacities.length ? Math.min(...capacities) : null,
    blockTokens: block !== null && block > 0 ? block : null,
    prefixCacheHits: hits.length ? Math.round(hits.reduce((s, x) => s + x, 0)) : null,
  };
}
