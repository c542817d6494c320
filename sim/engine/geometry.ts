/**
 * KV cache geometry: how many bytes a token costs, how much GPU memory is left for the cache after the
 * weights, and so how many blocks the engine gets. The formulas are vLLM's (AttentionSpec page size,
 * `num_blocks = available // page_size // num_layers`); the memory left after weights is an estimate
 * from the parameter count, because there are no real weights to load.
 */
import type { EngineArgs } from "./args";
import { StartupError } from "./errors";
import type { KVTransferConfig } from "./kv-transfer-config";
import { thousands } from "./log";
import type { ModelInfo, TorchDtype } from "./model";
import type { Platform } from "./platform";

const GiB = 2 ** 30;
/** Activation peak plus non-torch allocations seen during vLLM's memory profiling run. */
const ACTIVATION_BYTES = 1 * GiB;
/** CUDA graph pools, absent with --enforce-eager. */
const CUDA_GRAPH_BYTES = 0.5 * GiB;

export interface CacheGeometry {
  dtype: TorchDtype;
  /** str(cache_config.cache_dtype): "auto", "fp8", ... */
  cacheDtype: string;
  /** Bytes per cached element after resolving "auto" to the model dtype. */
  cacheDtypeBytes: number;
  tensorParallelSize: number;
  numHiddenLayers: number;
  /** Layers that hold paged KV (hybrid models keep a fixed-size state in their linear-attention layers). */
  kvLayers: number;
  numKvHeads: number;
  numKvHeadsPerRank: number;
  headDim: number;
  blockSize: number;
  /** Per TP rank: 2·kv_heads_per_rank·head_dim·bytes (MLA: (kv_lora_rank + qk_rope_head_dim)·bytes). */
  bytesPerTokenPerLayer: number;
  /** bytesPerTokenPerLayer × blockSize: one block of one layer on one rank (NixlAgentMetadata.block_lens). */
  pageSizeBytes: number;
  /** One token across all KV layers on one rank. */
  bytesPerToken: number;
  numGpuBlocks: number;
  availableKvCacheBytes: number;
  weightsBytesPerRank: number;
  maxModelLen: number;
  /** vLLM's `num_blocks / cdiv(max_model_len, block_size)`: how many max-length requests fit at once. */
  maxConcurrency: number;
  /** `int(max_concurrency * max_model_len)`: the "GPU KV cache size: N tokens" of the log. */
  kvCacheSizeTokens: number;
  /**
   * vLLM 0.29's KVCacheLayout name: "LBHNC" (the old HND) when NixlConnector asks for it (not for MLA),
   * else "LBNHC" (the old NHD); VLLM_KV_CACHE_LAYOUT overrides.
   */
  kvCacheLayout: KvCacheLayout;
  attentionBackend: string;
  useMla: boolean;
}

export type KvCacheLayout = "LBNHC" | "LBHNC";

/** VLLM_KV_CACHE_LAYOUT: the enum names, or the old HND/NHD spellings they replace. */
const LAYOUT_NAMES: Readonly<Record<string, KvCacheLayout>> = { LBNHC: "LBNHC", LBHNC: "LBHNC", NHD: "LBNHC", HND: "LBHNC" };

export function dtypeBytes(dtype: TorchDtype): number {
  return dtype === "float32" ? 4 : 2;
}

/** A rough dense-transformer parameter count: attention and MLP per layer, plus embeddings. */
export function estimateParameters(m: ModelInfo): number {
  const h = m.hiddenSize;
  const attention = h * m.numAttentionHeads * m.headDim * 2 + h * m.numKvHeads * m.headDim * 2;
  const mlp = 3 * h * m.intermediateSize;
  const embeddings = m.vocabSize * h * (m.tieWordEmbeddings ? 1 : 2);
  return m.numHiddenLayers * (attention + mlp) + embeddings;
}

/** vLLM's --max-num-seqs default: 1024 on large-memory GPUs other than A100, else 256. */
export function defaultMaxNumSeqs(platform: Platform): number {
  return platform.memoryGiB >= 70 && !/A100/i.test(platform.product) ? 1024 : 256;
}

function gib(bytes: number): string {
  return (bytes / GiB).toFixed(2);
}

export interface GeometryInputs {
  args: EngineArgs;
  model: ModelInfo;
  dtype: TorchDtype;
  maxModelLen: number;
  platform: Platform;
  kvTransfer: KVTransferConfig | null;
  env: NodeJS.ProcessEnv;
}

export function computeGeometry({ args, model, dtype, maxModelLen, platform, kvTransfer, env }: GeometryInputs): CacheGeometry {
  const tp = args.tensorParallelSize;
  const cacheDtypeBytes = args.kvCacheDtype === "auto" ? dtypeBytes(dtype) : 1;
  const numKvHeadsPerRank = Math.max(1, Math.floor(model.numKvHeads / tp));
  const bytesPerTokenPerLayer = model.mla
    ? (model.mla.kvLoraRank + model.mla.qkRopeHeadDim) * cacheDtypeBytes
    : 2 * numKvHeadsPerRank * model.headDim * cacheDtypeBytes;
  const kvLayers = model.numHiddenLayers - (model.convSsm?.kdaLayers.length ?? 0);
  const pageSizeBytes = bytesPerTokenPerLayer * args.blockSize;
  const weightsBytesPerRank = (estimateParameters(model) * dtypeBytes(dtype)) / tp;
  const budget = platform.memoryGiB * GiB * args.gpuMemoryUtilization;
  const available = budget - weightsBytesPerRank - ACTIVATION_BYTES - (args.enforceEager ? 0 : CUDA_GRAPH_BYTES);
  if (available <= 0) {
    throw new StartupError(
      "ValueError",
      "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine. " +
        `(weights ${gib(weightsBytesPerRank)} GiB per rank, budget ${gib(budget)} GiB at gpu_memory_utilization=${args.gpuMemoryUtilization})`,
    );
  }
  const numGpuBlocks = Math.floor(available / pageSizeBytes / Math.max(1, kvLayers));
  const capacityTokens = numGpuBlocks * args.blockSize;
  const blocksPerRequest = Math.ceil(maxModelLen / args.blockSize);
  if (numGpuBlocks < blocksPerRequest) {
    const needed = Math.ceil(maxModelLen / args.blockSize) * pageSizeBytes * kvLayers;
    throw new StartupError(
      "ValueError",
      `To serve at least one request with the models's max seq len (${maxModelLen}), (${gib(needed)} GiB KV cache is ` +
        `needed, which is larger than the available KV cache memory (${gib(available)} GiB). Based on the available ` +
        `memory, the estimated maximum model length is ${capacityTokens}. Try increasing \`gpu_memory_utilization\` ` +
        "or decreasing `max_model_len` when initializing the engine.",
    );
  }
  const kvCacheLayout = LAYOUT_NAMES[env.VLLM_KV_CACHE_LAYOUT ?? ""] ?? (kvTransfer && !model.mla ? "LBHNC" : "LBNHC");
  const maxConcurrency = numGpuBlocks / blocksPerRequest;
  return {
    dtype,
    cacheDtype: args.kvCacheDtype,
    cacheDtypeBytes,
    tensorParallelSize: tp,
    numHiddenLayers: model.numHiddenLayers,
    kvLayers,
    numKvHeads: model.numKvHeads,
    numKvHeadsPerRank,
    headDim: model.headDim,
    blockSize: args.blockSize,
    bytesPerTokenPerLayer,
    pageSizeBytes,
    bytesPerToken: bytesPerTokenPerLayer * kvLayers,
    numGpuBlocks,
    availableKvCacheBytes: available,
    weightsBytesPerRank,
    maxModelLen,
    maxConcurrency,
    kvCacheSizeTokens: Math.trunc(maxConcurrency * maxModelLen),
    kvCacheLayout,
    attentionBackend: platform.attentionBackend,
    useMla: model.mla !== null,
  };
}

/** `Available KV cache memory: X GiB`, as each worker rank prints it after profiling (gpu_worker.py). */
export function availableMemoryLine(g: CacheGeometry): string {
  return `Available KV cache memory: ${gib(g.availableKvCacheBytes)} GiB`;
}

/** The engine core's one capacity line (kv_cache_utils.py `update_kv_cache_capacity`). */
export function capacityLine(g: CacheGeometry): string {
  return `GPU KV cache size: ${thousands(g.kvCacheSizeTokens)} tokens, Maximum concurrency for ${thousands(g.maxModelLen)} tokens per request: ${g.maxConcurrency.toFixed(2)} x`;
}
