/**
 * Captured cache layouts with every number worked out by hand (vllm-facts section 3), shared by the cache
 * and fabric tests:
 *   bytes/token/layer = 2 · max(1, kv_heads / TP) · head_dim · dtype bytes   (MLA: (512 + 64) · bytes)
 *   page = bytes/token/layer · block size;  bytes/token (rank) = bytes/token/layer · layers
 * test/unit/fabric/budget.test.ts checks each against lib/engine's own invariants (layoutProblems).
 */
import type { CacheLayout, CacheRankLayout } from "../../../lib/engine/cache-layout";

type RankGeometry = Omit<CacheRankLayout, "rank">;

/** A layout of `tp` identical ranks; bytesPerTokenAllRanks is the hand-computed total, not a sum. */
export function layout(tp: number, geometry: RankGeometry, bytesPerTokenAllRanks: number): CacheLayout {
  return {
    source: "engine-log",
    tensorParallelSize: tp,
    ranks: Array.from({ length: tp }, (_, rank) => ({ rank, ...geometry })),
    bytesPerTokenAllRanks,
    cacheConfig: {},
    nixl: null,
  };
}

const common = { blockSize: 16, numGpuBlocks: 20000, numLayers: 32, headSize: 128, dtype: "bfloat16", cacheDtype: "auto", kvCacheLayout: "LBHNC", attentionBackend: "FLASH_ATTN", useMla: false } as const;

/** MHA, Llama-2-7B-like: 32 KV heads × 128 × 32 layers, bf16: 2·32·128·2 = 16384 B/token/layer. */
export const MHA_TP1 = layout(1, { ...common, numKvHeads: 32, numKvHeadsPerRank: 32, bytesPerTokenPerLayer: 16384, pageSizeBytes: 262144, bytesPerToken: 524288 }, 524288);

/** GQA, 8 KV heads: 2·8·128·2 = 4096 B/token/layer, ×32 = 131072 B/token. */
export const GQA_TP1 = layout(1, { ...common, numKvHeads: 8, numKvHeadsPerRank: 8, bytesPerTokenPerLayer: 4096, pageSizeBytes: 65536, bytesPerToken: 131072 }, 131072);

/** GQA with fp8 KV (1 byte): 2·8·128·1 = 2048 B/token/layer, ×32 = 65536 B/token. */
export const GQA_FP8_TP1 = layout(1, { ...common, cacheDtype: "fp8", numKvHeads: 8, numKvHeadsPerRank: 8, bytesPerTokenPerLayer: 2048, pageSizeBytes: 32768, bytesPerToken: 65536 }, 65536);

/** GQA over TP 2: 4 heads per rank, 2·4·128·2 = 2048 B/token/layer, 65536 B/token per rank, 131072 in all. */
export const GQA_TP2 = layout(2, { ...common, numKvHeads: 8, numKvHeadsPerRank: 4, bytesPerTokenPerLayer: 2048, pageSizeBytes: 32768, bytesPerToken: 65536 }, 131072);

/** GQA over TP 8: 1 head per rank, 2·1·128·2 = 512 B/token/layer, 16384 B/token per rank, 131072 in all. */
export const GQA_TP8 = layout(8, { ...common, numKvHeads: 8, numKvHeadsPerRank: 1, bytesPerTokenPerLayer: 512, pageSizeBytes: 8192, bytesPerToken: 16384 }, 131072);

/**
 * 4 KV heads over TP 8: max(1, 4/8) = 1 head per rank, replicated: 16384 B/token per rank, 131072 in all,
 * twice the model's own 2·4·128·2·32 = 65536 B/token.
 */
export const GQA4_TP8 = layout(8, { ...common, numKvHeads: 4, numKvHeadsPerRank: 1, bytesPerTokenPerLayer: 512, pageSizeBytes: 8192, bytesPerToken: 16384 }, 131072);

const mla = { ...common, numLayers: 61, numKvHeads: 1, numKvHeadsPerRank: 1, headSize: 576, attentionBackend: "FLASHMLA", useMla: true } as const;

/** MLA, DeepSeek-V3-like: (512 + 64)·2 = 1152 B/token/layer (no factor 2), ×61 layers = 70272 B/token. */
export const MLA_TP1 = layout(1, { ...mla, bytesPerTokenPerLayer: 1152, pageSizeBytes: 18432, bytesPerToken: 70272 }, 70272);

/** MLA over TP 8: the latent cache is on every rank, 70272 B/token each, 562176 in all. */
export const MLA_TP8 = layout(8, { ...mla, bytesPerTokenPerLayer: 1152, pageSizeBytes: 18432, bytesPerToken: 70272 }, 562176);
