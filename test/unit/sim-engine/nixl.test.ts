import { expect } from "chai";
import type { CacheGeometry } from "../../../sim/engine/geometry";
import { parseKvTransferConfig } from "../../../sim/engine/kv-transfer-config";
import { ProcessLog } from "../../../sim/engine/log";
import { type AgentMetadata, NixlConnector } from "../../../sim/engine/nixl";
import { compatibilityFactors, compatibilityHash, pythonJsonDumps } from "../../../sim/engine/nixl-compat";

// Expected values computed with CPython: hashlib.sha256(json.dumps(factors, sort_keys=True).encode()).
const FACTORS = {
  vllm_version: "0.29.0",
  nixl_connector_version: 4,
  model: "/models/llama",
  dtype: "torch.bfloat16",
  num_kv_heads: 8,
  head_size: 128,
  num_hidden_layers: 32,
  attn_backend_name: "FLASH_ATTN",
  cache_dtype: "auto",
  cross_layers_blocks: false,
  is_hma_enabled: false,
};

describe("sim-engine NIXL compatibility hash", () => {
  it("serialises factors exactly like json.dumps(sort_keys=True)", () => {
    expect(pythonJsonDumps(FACTORS)).to.equal(
      '{"attn_backend_name": "FLASH_ATTN", "cache_dtype": "auto", "cross_layers_blocks": false, "dtype": "torch.bfloat16", ' +
        '"head_size": 128, "is_hma_enabled": false, "model": "/models/llama", "nixl_connector_version": 4, ' +
        '"num_hidden_layers": 32, "num_kv_heads": 8, "vllm_version": "0.29.0"}',
    );
  });

  it("matches vLLM's hash_factors digest, including non-ASCII model paths", () => {
    expect(compatibilityHash(FACTORS)).to.equal("64457c959028da321823e023ac54662514a7888f3041c2f8be5f10e01b43010b");
    expect(compatibilityHash({ ...FACTORS, model: "/m/ünï" })).to.equal("eb1a2adba5cb26d86b315d367c33a28dfd8199cd1a1ab3381f2a6e6a6f0f8be2");
  });

  it("changes with the dtype", () => {
    expect(compatibilityHash({ ...FACTORS, dtype: "torch.float16" })).to.not.equal(compatibilityHash(FACTORS));
  });

  it("hashes vLLM 0.29.0's factors: no cross_layers_blocks, speculative_config None, transfer_mode pull", () => {
    const factors = compatibilityFactors({ vllmVersion: "0.29.0", model: "/models/llama", geometry: GEOMETRY, hmaEnabled: false });
    expect(Object.keys(factors).sort()).to.deep.equal(
      ["attn_backend_name", "cache_dtype", "dtype", "head_size", "is_hma_enabled", "model", "nixl_connector_version", "num_hidden_layers", "num_kv_heads", "speculative_config", "transfer_mode", "vllm_version"],
    );
    // CPython: json.dumps of these factors, sort_keys=True, then sha256.
    expect(pythonJsonDumps(factors)).to.include('"speculative_config": null, "transfer_mode": "pull"');
    expect(compatibilityHash(factors)).to.equal("230ab144b48d6ebbf79835c74edd18760744c1cfe63631e3b8027ebc29271a8b");
  });
});

/** A log that prints nothing: the validation under test never logs, and a handshake's lines are not this file's subject. */
const QUIET = Object.assign(new ProcessLog("Worker_TP0", 1), { log: () => undefined });

const GEOMETRY: CacheGeometry = {
  dtype: "bfloat16",
  cacheDtype: "auto",
  cacheDtypeBytes: 2,
  tensorParallelSize: 2,
  numHiddenLayers: 32,
  kvLayers: 32,
  numKvHeads: 8,
  numKvHeadsPerRank: 4,
  headDim: 128,
  blockSize: 16,
  bytesPerTokenPerLayer: 2 * 4 * 128 * 2,
  pageSizeBytes: 2 * 4 * 128 * 2 * 16,
  bytesPerToken: 2 * 4 * 128 * 2 * 32,
  numGpuBlocks: 1000,
  availableKvCacheBytes: 0,
  weightsBytesPerRank: 0,
  maxModelLen: 4096,
  maxConcurrency: 1,
  kvCacheSizeTokens: 4096,
  kvCacheLayout: "LBHNC",
  attentionBackend: "FLASH_ATTN",
  useMla: false,
};

/** A decode engine (TP 2, LBHNC, block 16) validating a producer's handshake metadata. */
function consumer(kvJson: Record<string, unknown> = {}, geometry: CacheGeometry = GEOMETRY): NixlConnector {
  return new NixlConnector({
    config: parseKvTransferConfig(JSON.stringify({ kv_connector: "NixlConnector", kv_role: "kv_both", ...kvJson })),
    geometry,
    hashFactors: FACTORS,
    sideChannelHost: "127.0.0.1",
    sideChannelPort: 0,
    timeScale: 1,
    releaseBlocks: () => undefined,
    logs: { core: QUIET, workers: [QUIET, QUIET] },
    nixl: { name: "nixl", version: "0.7.1", source: "METADATA" },
    onWorkerCrash: () => undefined,
  });
}

/** Metadata of a producer with `tp` ranks and otherwise the same geometry. */
function producerMeta(tp: number, over: Partial<AgentMetadata> = {}): AgentMetadata {
  const page = 2 * (8 / tp) * 128 * 2 * 16;
  return {
    engine_id: "p",
    agent_name: "agent-p",
    kv_caches_base_addr: Array.from({ length: 32 }, (_, i) => i),
    device_id: 0,
    num_blocks: 1000,
    block_lens: Array.from({ length: 32 }, () => page),
    kv_cache_layout: "LBHNC",
    block_size: 16,
    attn_backend_name: "FLASH_ATTN",
    tp_size: tp,
    use_mla: false,
    num_kv_heads: 8,
    ...over,
  };
}

describe("sim-engine NIXL handshake validation (_validate_remote_agent_handshake)", () => {
  it("accepts homogeneous and integer-ratio heterogeneous TP", () => {
    expect(consumer().validateRemote(producerMeta(2), 2)).to.equal(null);
    expect(consumer().validateRemote(producerMeta(1), 1)).to.equal(null);
    expect(consumer().validateRemote(producerMeta(4), 4)).to.equal(null);
  });

  it("rejects a non-integer TP ratio and a TP size that disagrees with the handoff", () => {
    expect(consumer().validateRemote(producerMeta(3, { block_lens: Array(32).fill(1) }), 3)).to.contain("is not divisible by");
    expect(consumer().validateRemote(producerMeta(2), 4)).to.contain("remote tp_size 2 (handshake) != 4 (kv_transfer_params)");
  });

  it("rejects a different KV layout unless enable_permute_local_kv and the remote is LBHNC (the old HND)", () => {
    const nhd = { ...GEOMETRY, kvCacheLayout: "LBNHC" as const };
    expect(consumer({}, nhd).validateRemote(producerMeta(2), 2)).to.contain("Heterogeneous TP expects same kv_cache_layout");
    expect(consumer({ enable_permute_local_kv: true }, nhd).validateRemote(producerMeta(2), 2)).to.equal(null);
  });

  it("allows a smaller producer block size only", () => {
    expect(consumer().validateRemote(producerMeta(2, { block_size: 32, block_lens: Array(32).fill(2 * 4 * 128 * 2 * 32) }), 2)).to.contain("must divide the local block_size");
    expect(consumer().validateRemote(producerMeta(2, { block_size: 8, block_lens: Array(32).fill(2 * 4 * 128 * 2 * 8) }), 2)).to.equal(null);
  });

  it("rejects a page of another dtype with vLLM's shape assertion", () => {
    const fp32 = producerMeta(2, { block_lens: Array(32).fill(2 * 4 * 128 * 4 * 16) });
    expect(consumer().validateRemote(fp32, 2)).to.equal(
      "AssertionError: Remote P worker KV layer cache must be of shape [2, N, local_kv_heads*tp_ratio, page_size, head_dim] and same dtype.",
    );
  });

  it("rejects a different number of layers", () => {
    const meta = producerMeta(2, { kv_caches_base_addr: [0, 1], block_lens: [32768, 32768] });
    expect(consumer().validateRemote(meta, 2)).to.contain("len(nixl_agent_meta.kv_caches_base_addr) == len(self.block_len_per_layer) (2 != 32)");
  });
});
