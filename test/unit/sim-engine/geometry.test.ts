import { expect } from "chai";
import { parseServeArgs } from "../../../sim/engine/args";
import { StartupError } from "../../../sim/engine/errors";
import { computeGeometry, defaultMaxNumSeqs, estimateParameters, type GeometryInputs } from "../../../sim/engine/geometry";
import type { ModelInfo } from "../../../sim/engine/model";
import type { Platform } from "../../../sim/engine/platform";

const LLAMA8B: ModelInfo = {
  path: "/models/llama",
  architecture: "LlamaForCausalLM",
  modelType: "llama",
  hiddenSize: 4096,
  numHiddenLayers: 32,
  numAttentionHeads: 32,
  numKvHeads: 8,
  headDim: 128,
  maxPositionEmbeddings: 131072,
  vocabSize: 128256,
  intermediateSize: 14336,
  tieWordEmbeddings: false,
  configDtype: "bfloat16",
  hasAutoMap: false,
  mla: null,
  convSsm: null,
};

const H100: Platform = {
  vendor: "nvidia",
  product: "NVIDIA H100 80GB HBM3",
  memoryGiB: 80,
  visibleDevices: ["0", "1"],
  visibilitySource: null,
  attentionBackend: "FLASH_ATTN",
};

function geometry(flags: string[], overrides: Partial<GeometryInputs> = {}) {
  const args = parseServeArgs(["/models/llama", ...flags]);
  return computeGeometry({ args, model: LLAMA8B, dtype: "bfloat16", maxModelLen: 16384, platform: H100, kvTransfer: args.kvTransferConfig, env: {}, ...overrides });
}

describe("sim-engine cache geometry", () => {
  it("uses vLLM's page formula: 2 · kv_heads · head_dim · dtype bytes per token per layer", () => {
    const g = geometry([]);
    expect(g.bytesPerTokenPerLayer).to.equal(2 * 8 * 128 * 2);
    expect(g.pageSizeBytes).to.equal(4096 * 16);
    expect(g.bytesPerToken).to.equal(4096 * 32);
    expect(g.numGpuBlocks).to.equal(Math.floor(g.availableKvCacheBytes / g.pageSizeBytes / 32));
    expect(g.kvCacheLayout).to.equal("LBNHC");
  });

  it("reports capacity as vLLM does: concurrency = blocks / cdiv(max_model_len, block_size), tokens = int(concurrency x max_model_len)", () => {
    const g = geometry([], { maxModelLen: 1000 });
    expect(g.maxConcurrency).to.equal(g.numGpuBlocks / 63);
    expect(g.kvCacheSizeTokens).to.equal(Math.trunc((g.numGpuBlocks / 63) * 1000));
    expect(g.kvCacheSizeTokens).to.be.lessThan(g.numGpuBlocks * 16);
  });

  it("splits KV heads across TP ranks (never below one) and halves bytes for fp8", () => {
    expect(geometry(["-tp", "2"]).numKvHeadsPerRank).to.equal(4);
    expect(geometry(["-tp", "16"]).numKvHeadsPerRank).to.equal(1);
    expect(geometry(["--kv-cache-dtype", "fp8"]).bytesPerTokenPerLayer).to.equal(2 * 8 * 128);
  });

  it("takes NixlConnector's LBHNC (the old HND) unless the model is MLA or VLLM_KV_CACHE_LAYOUT says otherwise", () => {
    const kv = ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'];
    expect(geometry(kv).kvCacheLayout).to.equal("LBHNC");
    expect(geometry(kv, { env: { VLLM_KV_CACHE_LAYOUT: "NHD" } }).kvCacheLayout).to.equal("LBNHC");
    expect(geometry(kv, { env: { VLLM_KV_CACHE_LAYOUT: "LBNHC" } }).kvCacheLayout).to.equal("LBNHC");
    expect(geometry([], { env: { VLLM_KV_CACHE_LAYOUT: "HND" } }).kvCacheLayout).to.equal("LBHNC");
    expect(geometry(kv, { model: { ...LLAMA8B, mla: { kvLoraRank: 512, qkRopeHeadDim: 64 } } }).kvCacheLayout).to.equal("LBNHC");
  });

  it("leaves less cache with a lower memory budget, and refuses when nothing is left", () => {
    expect(geometry(["--gpu-memory-utilization", "0.5"]).numGpuBlocks).to.be.lessThan(geometry([]).numGpuBlocks);
    expect(() => geometry(["--gpu-memory-utilization", "0.1"])).to.throw(StartupError, "No available memory for the cache blocks");
  });

  it("refuses a max_model_len the cache cannot hold", () => {
    expect(() => geometry([], { maxModelLen: 10_000_000 })).to.throw(StartupError, "To serve at least one request with the models's max seq len (10000000)");
  });

  it("estimates an 8B model at about 8 billion parameters", () => {
    expect(estimateParameters(LLAMA8B) / 1e9).to.be.within(7.5, 8.5);
  });

  it("defaults --max-num-seqs like vLLM: 1024 on large GPUs except A100, else 256", () => {
    expect(defaultMaxNumSeqs(H100)).to.equal(1024);
    expect(defaultMaxNumSeqs({ ...H100, product: "NVIDIA A100-SXM4-80GB" })).to.equal(256);
    expect(defaultMaxNumSeqs({ ...H100, memoryGiB: 48 })).to.equal(256);
  });
});
