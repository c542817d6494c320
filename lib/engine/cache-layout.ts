/**
 * The serving cache layout of one live engine, per TP rank, as the runbook's `capture-cache` writes
 * `cache-layout.json`: checked against the plan (block size, TP, dtype, cache dtype), against the
 * engine's own `vllm:cache_config_info`, and across ranks, with every rank present. Gate D groups
 * engines by this layout; attestation binds it by {@link cacheLayoutDigest}.
 *
 * The per-rank detail comes from the engine's startup log and the model's config.json ({@link RankReport},
 * layout-sources.ts); block_size, num_gpu_blocks and cache_dtype come from `/metrics`.
 */
import { sha256Json } from "../digest";
import { EngineError } from "./errors";
import { subjectName } from "./generation";
import { cacheConfigInfo, parsePrometheusText } from "./prometheus";

/** The geometry of one TP rank's paged KV cache. */
export interface CacheRankLayout {
  readonly rank: number;
  readonly blockSize: number;
  readonly numGpuBlocks: number;
  /** Layers that hold paged KV (a hybrid model's linear-attention layers keep fixed state instead). */
  readonly numLayers: number;
  readonly numKvHeads: number;
  /** max(1, numKvHeads / TP). */
  readonly numKvHeadsPerRank: number;
  readonly headSize: number;
  /** The model dtype the engine resolved (torch name: bfloat16, float16, float32). */
  readonly dtype: string;
  /** str(cache_config.cache_dtype): auto, fp8, ... */
  readonly cacheDtype: string;
  /** vLLM 0.29's name as the rank logs it: LBHNC (the old HND, which NixlConnector asks for) or LBNHC (the old NHD). */
  readonly kvCacheLayout: string;
  readonly attentionBackend: string;
  readonly useMla: boolean;
  /** One token of one layer on this rank: 2·heads_per_rank·head_size·bytes (MLA: no factor 2). */
  readonly bytesPerTokenPerLayer: number;
  /** One block of one layer on this rank (NixlAgentMetadata.block_lens). */
  readonly pageSizeBytes: number;
  /** One token across every KV layer on this rank. */
  readonly bytesPerToken: number;
}

/** Where the layout was read; see layout-sources.ts. One source today: what the engine itself shows. */
export type CacheLayoutSourceKind = "engine-log";

/** What a layout source reports: one entry per rank it saw, and the TP size the engine says it runs. */
export interface RankReport {
  readonly tensorParallelSize: number;
  readonly ranks: ReadonlyArray<CacheRankLayout>;
  /** NixlConnector identity, when the source knows it (the engine id changes on every restart). */
  readonly nixl: { readonly engineId: string | null; readonly compatibilityHash: string | null } | null;
}

/** The `vllm:cache_config_info` facts the layout is checked against, plus all its labels as evidence. */
export interface CacheConfigFacts {
  readonly blockSize: number;
  readonly numGpuBlocks: number;
  readonly cacheDtype: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** What the plan says the cache must be. */
export interface CacheExpectations {
  readonly blockSize: number;
  readonly tensorParallelSize: number;
  /** The plan's resolved `--dtype` ("auto" is not checked). */
  readonly dtype: string;
  readonly kvCacheDtype: string;
}

export interface CacheLayout {
  readonly source: CacheLayoutSourceKind;
  readonly tensorParallelSize: number;
  readonly ranks: ReadonlyArray<CacheRankLayout>;
  /** One token across every KV layer on every rank: what a NIXL handoff moves per token. */
  readonly bytesPerTokenAllRanks: number;
  readonly cacheConfig: Readonly<Record<string, string>>;
  readonly nixl: RankReport["nixl"];
}

type Subject = { engineId: string; hostAlias: string; url: string };

function positiveInt(label: string | undefined): number | undefined {
  return label !== undefined && /^[1-9]\d*$/.test(label) ? Number(label) : undefined;
}

/** Reads `vllm:cache_config_info` from a `/metrics` body; num_gpu_blocks must be set (not "None"). */
export function cacheConfigFrom(s: Subject, metricsText: string): CacheConfigFacts {
  const labels = cacheConfigInfo(parsePrometheusText(metricsText));
  if (!labels) {
    throw new EngineError("NARWHAL_CACHE_LAYOUT_SOURCE", `${subjectName(s)}: /metrics at ${s.url} has no vllm:cache_config_info, so the cache cannot be captured`);
  }
  const blockSize = positiveInt(labels.block_size);
  const numGpuBlocks = positiveInt(labels.num_gpu_blocks);
  const cacheDtype = labels.cache_dtype;
  const bad = [
    blockSize === undefined ? `block_size=${JSON.stringify(labels.block_size ?? null)}` : "",
    numGpuBlocks === undefined ? `num_gpu_blocks=${JSON.stringify(labels.num_gpu_blocks ?? null)}` : "",
    !cacheDtype ? `cache_dtype=${JSON.stringify(cacheDtype ?? null)}` : "",
  ].filter(Boolean);
  if (bad.length) {
    throw new EngineError(
      "NARWHAL_CACHE_LAYOUT_SOURCE",
      `${subjectName(s)}: vllm:cache_config_info at ${s.url} has ${bad.join(", ")}; the cache is not sized yet or the labels are not vLLM's`,
    );
  }
  return { blockSize: blockSize!, numGpuBlocks: numGpuBlocks!, cacheDtype: cacheDtype, labels: { ...labels } };
}

const DTYPE_ALIASES: Readonly<Record<string, string>> = { half: "float16", fp16: "float16", float: "float32", fp32: "float32", bf16: "bfloat16" };

/** vLLM's `--dtype` spellings mapped onto torch names: "half" and "float16" are the same dtype. */
export function normaliseDtype(dtype: string): string {
  const d = dtype.replace(/^torch\./, "").toLowerCase();
  return DTYPE_ALIASES[d] ?? d;
}

/**
 * The per-rank fields that make up "layout and page geometry": what one handoff moves and how.
 * `numGpuBlocks` is capacity, not geometry (it follows the free memory at start).
 */
export const PAGE_GEOMETRY_FIELDS = [
  "blockSize",
  "numLayers",
  "numKvHeads",
  "numKvHeadsPerRank",
  "headSize",
  "dtype",
  "cacheDtype",
  "kvCacheLayout",
  "attentionBackend",
  "useMla",
  "bytesPerTokenPerLayer",
  "pageSizeBytes",
  "bytesPerToken",
] as const satisfies ReadonlyArray<keyof CacheRankLayout>;

/** Fields every rank of one engine must share (all but `rank`): its geometry and its capacity. */
const [BLOCK_SIZE, ...GEOMETRY_AFTER_BLOCK] = PAGE_GEOMETRY_FIELDS;
const SHARED: ReadonlyArray<keyof CacheRankLayout> = [BLOCK_SIZE, "numGpuBlocks", ...GEOMETRY_AFTER_BLOCK];

function list(ns: number[]): string {
  return ns.join(", ");
}

/** Every problem of a rank report against the plan and the engine's cache config (empty: consistent). */
export function layoutProblems(config: CacheConfigFacts, report: RankReport, expected: CacheExpectations): string[] {
  const problems: string[] = [];
  const tp = expected.tensorParallelSize;
  if (report.tensorParallelSize !== tp) problems.push(`the engine runs tensor parallel size ${report.tensorParallelSize}; the plan has ${tp}`);
  if (config.blockSize !== expected.blockSize) problems.push(`block_size ${config.blockSize} (vllm:cache_config_info); the plan has ${expected.blockSize}`);
  if (config.cacheDtype !== expected.kvCacheDtype) {
    problems.push(`cache_dtype ${JSON.stringify(config.cacheDtype)} (vllm:cache_config_info); the plan has ${JSON.stringify(expected.kvCacheDtype)}`);
  }

  const seen = report.ranks.map((r) => r.rank);
  const missing = Array.from({ length: tp }, (_, i) => i).filter((r) => !seen.includes(r));
  const extra = [...new Set(seen.filter((r) => !(Number.isInteger(r) && r >= 0 && r < tp)))];
  const twice = [...new Set(seen.filter((r, i) => seen.indexOf(r) !== i))];
  if (missing.length) problems.push(`rank${missing.length > 1 ? "s" : ""} ${list(missing)} of ${tp} missing`);
  if (extra.length) problems.push(`rank${extra.length > 1 ? "s" : ""} ${list(extra)} outside tensor parallel size ${tp}`);
  if (twice.length) problems.push(`rank${twice.length > 1 ? "s" : ""} ${list(twice)} reported more than once`);

  for (const r of report.ranks) {
    const at = `rank ${r.rank}`;
    if (r.blockSize !== config.blockSize) problems.push(`${at}: block size ${r.blockSize}, vllm:cache_config_info says ${config.blockSize}`);
    if (r.numGpuBlocks !== config.numGpuBlocks) problems.push(`${at}: ${r.numGpuBlocks} GPU blocks, vllm:cache_config_info says ${config.numGpuBlocks}`);
    if (r.cacheDtype !== config.cacheDtype) problems.push(`${at}: cache dtype ${JSON.stringify(r.cacheDtype)}, vllm:cache_config_info says ${JSON.stringify(config.cacheDtype)}`);
    if (expected.dtype !== "auto" && normaliseDtype(r.dtype) !== normaliseDtype(expected.dtype)) {
      problems.push(`${at}: dtype ${JSON.stringify(r.dtype)}; the plan has ${JSON.stringify(expected.dtype)}`);
    }
    const perRank = Math.max(1, Math.floor(r.numKvHeads / tp));
    if (!r.useMla && r.numKvHeadsPerRank !== perRank) problems.push(`${at}: ${r.numKvHeadsPerRank} KV heads per rank; ${r.numKvHeads} heads over TP ${tp} give ${perRank}`);
    if (r.pageSizeBytes !== r.bytesPerTokenPerLayer * r.blockSize) {
      problems.push(`${at}: page size ${r.pageSizeBytes} B is not ${r.bytesPerTokenPerLayer} B/token/layer x block size ${r.blockSize}`);
    }
    if (r.bytesPerToken !== r.bytesPerTokenPerLayer * r.numLayers) {
      problems.push(`${at}: ${r.bytesPerToken} B/token is not ${r.bytesPerTokenPerLayer} B/token/layer x ${r.numLayers} layers`);
    }
  }
  const first = report.ranks[0];
  for (const r of report.ranks.slice(1)) {
    const differ = SHARED.filter((k) => r[k] !== first[k]);
    if (differ.length) problems.push(`rank ${r.rank} differs from rank ${first.rank} in ${differ.map((k) => `${k} (${JSON.stringify(r[k])} vs ${JSON.stringify(first[k])})`).join(", ")}`);
  }
  return problems;
}

/** The checked layout, ranks in order; throws `NARWHAL_CACHE_LAYOUT_MISMATCH` listing every problem. */
export function assembleCacheLayout(
  s: Subject,
  source: CacheLayoutSourceKind,
  config: CacheConfigFacts,
  report: RankReport,
  expected: CacheExpectations,
): CacheLayout {
  const problems = layoutProblems(config, report, expected);
  if (problems.length) {
    throw new EngineError(
      "NARWHAL_CACHE_LAYOUT_MISMATCH",
      `${subjectName(s)}: the live cache layout at ${s.url} (source ${source}) does not match its plan; nothing was captured:\n` +
        problems.map((p) => `  - ${p}`).join("\n"),
    );
  }
  const ranks = [...report.ranks].sort((a, b) => a.rank - b.rank);
  return {
    source,
    tensorParallelSize: report.tensorParallelSize,
    ranks,
    bytesPerTokenAllRanks: ranks.reduce((sum, r) => sum + r.bytesPerToken, 0),
    cacheConfig: config.labels,
    nixl: report.nixl,
  };
}

/**
 * `sha256:` over the geometry alone (TP size and the per-rank records): two engines with the same layout
 * and page geometry share it whatever their address, source or NIXL engine id, which is what Gate D's
 * grouping and attestation compare.
 */
export function cacheLayoutDigest(layout: Pick<CacheLayout, "tensorParallelSize" | "ranks">): string {
  return sha256Json({ tensorParallelSize: layout.tensorParallelSize, ranks: layout.ranks });
}
