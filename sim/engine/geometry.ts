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
  maxConcurrency: number;
  /** "HND" when NixlConnector is configured (it forces HND), else "NHD"; VLLM_KV_CACHE_LAYOUT overrides. */
  kvCacheLayout: "NHD" | "HND";
  attentionBackend: string;
  useMla: boolean;
}

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
  if (capacityTokens < maxModelLen) {
    const needed = Math.ceil(maxModelLen / args.blockSize) * pageSizeBytes * kvLayers;
    throw new StartupError(
      "ValueError",
      `To serve at least one request with the models's max seq len (${maxModelLen}), (${gib(needed)} GiB KV cache is ` +
        `needed, which is larger than the available KV cache memory (${gib(available)} GiB). Based on the available ` +
        `memory, the estimated maximum model length is ${capacityTokens}. Try increasing \`gpu_memory_utilization\` ` +
        "or decreasing `max_model_len` when initializing the engine.",
    );
  }
  const layoutEnv = env.VLLM_KV_CACHE_LAYOUT;
  const kvCacheLayout = layoutEnv === "NHD" || layoutEnv === "HND" ? layoutEnv : kvTransfer ? "HND" : "NHD";
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
    maxConcurrency: capacityTokens / maxModelLen,
    kvCacheLayout,
    attentionBackend: platform.attentionBackend,
    useMla: model.mla !== null,
  };
}

/** The log lines vLLM prints once the cache is sized (kv_cache_utils.py and gpu_worker.py). */
export function geometryLogLines(g: CacheGeometry): Array<[string, string]> {
  return [
    ["gpu_worker.py:298", `Available KV cache memory: ${gib(g.availableKvCacheBytes)} GiB`],
    ["kv_cache_utils.py:1087", `GPU KV cache size: ${thousands(g.numGpuBlocks * g.blockSize)} tokens`],
    [
      "kv_cache_utils.py:1091",
      `Maximum concurrency for ${thousands(g.maxModelLen)} tokens per request: ${g.maxConcurrency.toFixed(2)}x`,
    ],
  ];
}
