/**
 * Where the per-rank cache detail comes from. `/metrics` gives block_size, num_gpu_blocks and
 * cache_dtype on every engine, but vLLM has no HTTP endpoint for the rest (layers, heads per rank,
 * head size, layout, attention backend), so the source depends on what runs:
 *
 * | source         | engine            | what it reads                                                  |
 * |----------------|-------------------|----------------------------------------------------------------|
 * | `sim-endpoint` | engine simulator  | `GET /sim/cache-layout` (sim-only; a real vLLM answers 404)     |
 * | `engine-log`   | real vLLM         | each TP worker's startup log lines, plus the model's config.json |
 *
 * Both are pure parsers; the provider does the I/O. `engine-log` needs the engine's log text (the
 * native runtime keeps it in `<runDir>/engine.log`, a container in `docker logs`), which only an SSH
 * session to the host can read, so the cache-capture provider does not fetch it yet.
 */
import { z } from "zod";
import type { CacheConfigFacts, CacheRankLayout, RankReport } from "./cache-layout";
import { EngineError } from "./errors";

const positive = z.number().int().positive();
const SimLayoutSchema = z.object({
  dtype: z.string().min(1),
  cache_dtype: z.string().min(1),
  kv_layers: positive,
  num_kv_heads: positive,
  num_kv_heads_per_rank: positive,
  head_dim: positive,
  tensor_parallel_size: positive,
  block_size: positive,
  num_gpu_blocks: positive,
  kv_cache_layout: z.string().min(1),
  attention_backend: z.string().min(1),
  use_mla: z.boolean(),
  bytes_per_token_per_layer: positive,
  page_size_bytes: positive,
  bytes_per_token: positive,
  engine_id: z.string().nullable().optional(),
  compatibility_hash: z.string().nullable().optional(),
  kv_connector: z.string().nullable().optional(),
});

/**
 * The simulator's `/sim/cache-layout` document. One simulated process stands for every TP rank and
 * sizes them alike, so the report has one identical record per rank 0..TP-1.
 */
export function ranksFromSimLayout(doc: unknown): RankReport {
  const parsed = SimLayoutSchema.safeParse(doc);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(document)"}: ${i.message}`).join("; ");
    throw new EngineError("NARWHAL_CACHE_LAYOUT_SOURCE", `/sim/cache-layout is not the simulator's layout document: ${issues}`);
  }
  const d = parsed.data;
  const rank = (r: number): CacheRankLayout => ({
    rank: r,
    blockSize: d.block_size,
    numGpuBlocks: d.num_gpu_blocks,
    numLayers: d.kv_layers,
    numKvHeads: d.num_kv_heads,
    numKvHeadsPerRank: d.num_kv_heads_per_rank,
    headSize: d.head_dim,
    dtype: d.dtype,
    cacheDtype: d.cache_dtype,
    kvCacheLayout: d.kv_cache_layout,
    attentionBackend: d.attention_backend,
    useMla: d.use_mla,
    bytesPerTokenPerLayer: d.bytes_per_token_per_layer,
    pageSizeBytes: d.page_size_bytes,
    bytesPerToken: d.bytes_per_token,
  });
  return {
    tensorParallelSize: d.tensor_parallel_size,
    ranks: Array.from({ length: d.tensor_parallel_size }, (_, r) => rank(r)),
    nixl: d.kv_connector ? { engineId: d.engine_id ?? null, compatibilityHash: d.compatibility_hash ?? null } : null,
  };
}

/** The KV-relevant part of the model's config.json, as discovery reads it. */
export interface ModelKvGeometry {
  /** The dtype the engine resolved (the plan's `--dtype`, or the checkpoint's torch_dtype). */
  readonly dtype: string;
  /** Layers holding paged KV (num_hidden_layers minus a hybrid model's linear-attention layers). */
  readonly kvLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  /** DeepSeek-style MLA: one latent vector per token, no K/V split and no head split. */
  readonly mla?: { readonly kvLoraRank: number; readonly qkRopeHeadDim: number };
}

/** `(VllmWorker TP1 pid=42)`, `(Worker_TP1 pid=42)`: the prefix vLLM's multiprocess executor gives worker lines. */
const WORKER_PREFIX = /^\((?:VllmWorker|Worker)[ _]TP(\d+)\b[^)]*\)\s*/;
/** Any other process prefix, e.g. `(EngineCore_DP0 pid=41)`: the worker itself when TP is 1. */
const OTHER_PREFIX = /^\([^)]*\)\s*/;
const AVAILABLE = /Available KV cache memory: ([\d.]+) GiB/;
const BACKEND = /Using (?:AttentionBackendEnum\.|_Backend\.)?(.+?) backend\b/;
const LAYOUT = /setting KV cache layout to (HND|NHD)\b/i;

const BACKEND_NAMES: Readonly<Record<string, string>> = {
  "Flash Attention": "FLASH_ATTN",
  FlashAttention: "FLASH_ATTN",
  FlashInfer: "FLASHINFER",
  FlashMLA: "FLASHMLA",
  "Triton MLA": "TRITON_MLA",
};

function backendName(raw: string): string {
  return BACKEND_NAMES[raw] ?? raw.trim().toUpperCase().replace(/\s+/g, "_");
}

/**
 * A real vLLM's per-rank detail from its startup log: a rank is present when its worker logged
 * "Available KV cache memory" (it profiled memory and sized its cache); its attention backend and KV
 * layout come from its own lines ("Using FLASH_ATTN backend.", "NixlConnector setting KV cache layout to
 * HND ..."; NHD when it logged none). Heads, head size and layers come from the model config; block
 * size, block count and cache dtype from `vllm:cache_config_info` (vLLM sizes every rank to the smallest).
 */
export function ranksFromEngineLog(log: string, model: ModelKvGeometry, config: CacheConfigFacts, tensorParallelSize: number): RankReport {
  const present = new Set<number>();
  const backendOf = new Map<number, string>();
  const layoutOf = new Map<number, string>();
  for (const raw of log.split("\n")) {
    let line = raw.trimEnd();
    let rank: number | undefined;
    const worker = WORKER_PREFIX.exec(line);
    if (worker) {
      rank = Number(worker[1]);
      line = line.slice(worker[0].length);
    } else {
      if (tensorParallelSize !== 1) continue; // only TP workers speak for a rank when TP > 1
      rank = 0;
      line = line.replace(OTHER_PREFIX, "");
    }
    if (AVAILABLE.test(line)) present.add(rank);
    const backend = BACKEND.exec(line);
    if (backend) backendOf.set(rank, backendName(backend[1]));
    const layout = LAYOUT.exec(line);
    if (layout) layoutOf.set(rank, layout[1].toUpperCase());
  }
  const cacheBytes = /^fp8/.test(config.cacheDtype) ? 1 : model.dtype === "float32" ? 4 : 2;
  const perRank = Math.max(1, Math.floor(model.numKvHeads / tensorParallelSize));
  const bytesPerTokenPerLayer = model.mla ? (model.mla.kvLoraRank + model.mla.qkRopeHeadDim) * cacheBytes : 2 * perRank * model.headDim * cacheBytes;
  const ranks = [...present].sort((a, b) => a - b).map(
    (rank): CacheRankLayout => ({
      rank,
      blockSize: config.blockSize,
      numGpuBlocks: config.numGpuBlocks,
      numLayers: model.kvLayers,
      numKvHeads: model.numKvHeads,
      numKvHeadsPerRank: perRank,
      headSize: model.headDim,
      dtype: model.dtype,
      cacheDtype: config.cacheDtype,
      kvCacheLayout: layoutOf.get(rank) ?? "NHD",
      attentionBackend: backendOf.get(rank) ?? "unknown",
      useMla: model.mla !== undefined,
      bytesPerTokenPerLayer,
      pageSizeBytes: bytesPerTokenPerLayer * config.blockSize,
      bytesPerToken: bytesPerTokenPerLayer * model.kvLayers,
    }),
  );
  return { tensorParallelSize, ranks, nixl: null };
}
