/**
 * A captured cache layout compared with what the engine simulator says it resolved (its control port's
 * GET /cache-layout): every rank's record field by field, the all-ranks bytes per token and the NIXL
 * identity. The unit tests against a local simulator and the provider tests against a simulated host share it.
 */
import { expect } from "chai";
import type { CacheLayout } from "../../lib/engine/cache-layout";

export function expectSimulatorTruth(layout: CacheLayout, truth: Record<string, any>): void {
  for (const r of layout.ranks) {
    expect(r).to.deep.equal({
      rank: r.rank,
      blockSize: truth.block_size,
      numGpuBlocks: truth.num_gpu_blocks,
      numLayers: truth.kv_layers,
      numKvHeads: truth.num_kv_heads,
      numKvHeadsPerRank: truth.num_kv_heads_per_rank,
      headSize: truth.head_dim,
      dtype: truth.dtype,
      cacheDtype: truth.cache_dtype,
      kvCacheLayout: "LBHNC",
      attentionBackend: truth.attention_backend,
      useMla: false,
      bytesPerTokenPerLayer: truth.bytes_per_token_per_layer,
      pageSizeBytes: truth.page_size_bytes,
      bytesPerToken: truth.bytes_per_token,
    });
  }
  expect(layout.bytesPerTokenAllRanks).to.equal(truth.bytes_per_token_all_ranks);
  expect(layout.nixl).to.deep.equal({ engineId: truth.engine_id, compatibilityHash: null });
}
