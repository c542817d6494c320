import { expect } from "chai";
import {
  assembleCacheLayout,
  cacheConfigFrom,
  cacheLayoutDigest,
  layoutProblems,
  normaliseDtype,
  type CacheConfigFacts,
  type CacheRankLayout,
  type RankReport,
} from "../../../lib/engine/cache-layout";
import { checkStartupAgainstMetrics, ranksFromEngineLog } from "../../../lib/engine/layout-sources";
import type { ModelKvGeometry } from "../../../lib/engine/model-kv";
import { readEngineStartup } from "../../../lib/engine/startup-log";
import { RECORDED, SUBJECT, thrown, VLLM_TP2_LOG } from "./helpers";

const EXPECTED = { blockSize: 16, tensorParallelSize: 2, dtype: "bfloat16", kvCacheDtype: "auto" };
/** Computed independently with Python's json.dumps(sort_keys=True, separators=(",", ":")) and hashlib. */
const TP2_DIGEST = "sha256:81cc9c0b33a27e8c82eb6e5ef59a068d676961f8dc33e959f61720edf856de7e";
const ORIGIN = { host: "gpu-a", source: "/runs/e1/engine.log", pid: 1001 };
const MODEL: ModelKvGeometry = { dtype: "bfloat16", kvLayers: 4, numKvHeads: 2, headDim: 64 };

const rank = (r: number): CacheRankLayout => ({
  rank: r,
  blockSize: 16,
  numGpuBlocks: 4755237,
  numLayers: 4,
  numKvHeads: 2,
  numKvHeadsPerRank: 1,
  headSize: 64,
  dtype: "bfloat16",
  cacheDtype: "auto",
  kvCacheLayout: "LBHNC",
  attentionBackend: "FLASH_ATTN",
  useMla: false,
  bytesPerTokenPerLayer: 256,
  pageSizeBytes: 4096,
  bytesPerToken: 1024,
});

describe("engine cache layout", () => {
  const config: CacheConfigFacts = cacheConfigFrom(SUBJECT, RECORDED["/metrics"].body);
  const startup = readEngineStartup(VLLM_TP2_LOG, ORIGIN);
  const report = ranksFromEngineLog(startup, MODEL, config);

  it("reads block_size, num_gpu_blocks and cache_dtype from vllm:cache_config_info", () => {
    expect(config).to.include({ blockSize: 16, numGpuBlocks: 4755237, cacheDtype: "auto" });
    expect(config.labels.enable_prefix_caching).to.equal("True");
  });

  it("refuses a cache config that is missing or not sized yet", () => {
    const none = thrown(() => cacheConfigFrom(SUBJECT, "process_start_time_seconds 1.0\n"));
    expect(none.code).to.equal("NARWHAL_CACHE_LAYOUT_SOURCE");
    expect(none.message).to.equal("engine e1 on host gpu-a: /metrics at http://127.0.0.1:8100 has no vllm:cache_config_info, so the cache cannot be captured");
    const unsized = thrown(() => cacheConfigFrom(SUBJECT, 'vllm:cache_config_info{block_size="16",num_gpu_blocks="None",cache_dtype="auto"} 1.0\n'));
    expect(unsized.message).to.equal(
      'engine e1 on host gpu-a: vllm:cache_config_info at http://127.0.0.1:8100 has num_gpu_blocks="None"; the cache is not sized yet or the labels are not vLLM\'s',
    );
  });

  it("assembles the checked layout and its digest", () => {
    const layout = assembleCacheLayout(SUBJECT, "engine-log", config, report, EXPECTED);
    expect(layout.ranks).to.deep.equal([rank(0), rank(1)]);
    expect(layout).to.include({ source: "engine-log", tensorParallelSize: 2, bytesPerTokenAllRanks: 2048 });
    expect(layout.nixl).to.deep.equal({ engineId: "5f0c2d8e-3b1a-4c6f-9e27-0d4b8a71c3e5", compatibilityHash: null });
    expect(cacheLayoutDigest(layout)).to.equal(TP2_DIGEST);
  });

  it("keeps the digest to geometry: another NIXL engine id or rank order gives the same digest", () => {
    const other: RankReport = { tensorParallelSize: 2, ranks: [rank(1), rank(0)], nixl: { engineId: "x", compatibilityHash: null } };
    expect(cacheLayoutDigest(assembleCacheLayout(SUBJECT, "engine-log", config, other, EXPECTED))).to.equal(TP2_DIGEST);
    expect(cacheLayoutDigest({ tensorParallelSize: 2, ranks: [rank(0), { ...rank(1), numGpuBlocks: 1 }] })).to.not.equal(TP2_DIGEST);
  });

  it("lists every disagreement with the plan, the cache config and across ranks", () => {
    const report: RankReport = {
      tensorParallelSize: 4,
      ranks: [rank(0), { ...rank(2), attentionBackend: "FLASHINFER" }, rank(0)],
      nixl: null,
    };
    const err = thrown(() => assembleCacheLayout(SUBJECT, "engine-log", config, report, { blockSize: 128, tensorParallelSize: 2, dtype: "half", kvCacheDtype: "fp8" }));
    expect(err.code).to.equal("NARWHAL_CACHE_LAYOUT_MISMATCH");
    expect(err.message).to.equal(
      [
        "engine e1 on host gpu-a: the live cache layout at http://127.0.0.1:8100 (source engine-log) does not match its plan; nothing was captured:",
        "  - the engine runs tensor parallel size 4; the plan has 2",
        "  - block_size 16 (vllm:cache_config_info); the plan has 128",
        '  - cache_dtype "auto" (vllm:cache_config_info); the plan has "fp8"',
        "  - rank 1 of 2 missing",
        "  - rank 2 outside tensor parallel size 2",
        "  - rank 0 reported more than once",
        '  - rank 0: dtype "bfloat16"; the plan has "half"',
        '  - rank 2: dtype "bfloat16"; the plan has "half"',
        '  - rank 0: dtype "bfloat16"; the plan has "half"',
        '  - rank 2 differs from rank 0 in attentionBackend ("FLASHINFER" vs "FLASH_ATTN")',
      ].join("\n"),
    );
  });

  it("checks each rank against vllm:cache_config_info and its own arithmetic", () => {
    const bad = { ...rank(1), numGpuBlocks: 100, numKvHeadsPerRank: 2, pageSizeBytes: 1, bytesPerToken: 5 };
    expect(layoutProblems(config, { tensorParallelSize: 2, ranks: [rank(0), bad], nixl: null }, EXPECTED)).to.deep.equal([
      "rank 1: 100 GPU blocks, vllm:cache_config_info says 4755237",
      "rank 1: 2 KV heads per rank; 2 heads over TP 2 give 1",
      "rank 1: page size 1 B is not 256 B/token/layer x block size 16",
      "rank 1: 5 B/token is not 256 B/token/layer x 4 layers",
      "rank 1 differs from rank 0 in numGpuBlocks (100 vs 4755237), numKvHeadsPerRank (2 vs 1), pageSizeBytes (1 vs 4096), bytesPerToken (5 vs 1024)",
    ]);
  });

  it("treats vLLM's dtype spellings as one dtype, and does not check 'auto'", () => {
    expect(["half", "float16", "fp16", "torch.float16"].map(normaliseDtype)).to.deep.equal(["float16", "float16", "float16", "float16"]);
    expect(["float", "bf16", "BFloat16"].map(normaliseDtype)).to.deep.equal(["float32", "bfloat16", "bfloat16"]);
    expect(layoutProblems(config, report, { ...EXPECTED, dtype: "auto" })).to.deep.equal([]);
    expect(layoutProblems(config, report, { ...EXPECTED, dtype: "bf16" })).to.deep.equal([]);
  });

  describe("ranks from a vLLM 0.29.0 startup log (layout-sources.ts)", () => {
    it("reads both TP workers' backend and LBHNC layout, and computes heads per rank from the model (never logged)", () => {
      expect(report).to.deep.equal({ tensorParallelSize: 2, ranks: [rank(0), rank(1)], nixl: { engineId: "5f0c2d8e-3b1a-4c6f-9e27-0d4b8a71c3e5", compatibilityHash: null } });
      expect(ranksFromEngineLog(startup, { ...MODEL, numKvHeads: 1 }, config).ranks[0]).to.include({ numKvHeadsPerRank: 1, bytesPerTokenPerLayer: 256 });
    });

    it("reports a worker that never sized its cache as a missing rank", () => {
      const log = VLLM_TP2_LOG.split("\n")
        .filter((l) => !(l.startsWith("(Worker_TP1") && l.includes("Available KV cache memory")))
        .join("\n");
      expect(layoutProblems(config, ranksFromEngineLog(readEngineStartup(log, ORIGIN), MODEL, config), EXPECTED)).to.deep.equal(["rank 1 of 2 missing"]);
    });

    it("sizes fp8 and MLA caches by vLLM's formulas", () => {
      const fp8 = ranksFromEngineLog(startup, MODEL, { ...config, cacheDtype: "fp8" }).ranks[0];
      expect(fp8).to.include({ bytesPerTokenPerLayer: 128, pageSizeBytes: 2048, bytesPerToken: 512 });
      const mla = ranksFromEngineLog(startup, { ...MODEL, numKvHeads: 1, headDim: 576, mla: { kvLoraRank: 512, qkRopeHeadDim: 64 } }, config).ranks[0];
      expect(mla).to.include({ useMla: true, numKvHeadsPerRank: 1, bytesPerTokenPerLayer: 1152 });
    });

    it("refuses a log whose capacity line is not the serving engine's (kv_cache_size_tokens in /metrics)", () => {
      checkStartupAgainstMetrics(startup, config, ORIGIN);
      const other = { ...config, labels: { ...config.labels, kv_cache_size_tokens: "76083776" } };
      const err = thrown(() => checkStartupAgainstMetrics(startup, other, ORIGIN));
      expect(err.code).to.equal("NARWHAL_CACHE_LOG_ROTATED");
      expect(err.message).to.equal(
        "host gpu-a: /runs/e1/engine.log: the log says 'GPU KV cache size: 76,083,792 tokens', but the serving engine's /metrics has " +
          'kv_cache_size_tokens="76083776": the log is not the serving process\'s (another start wrote it); nothing was captured',
      );
      const { kv_cache_size_tokens: _dropped, ...older } = config.labels;
      checkStartupAgainstMetrics(startup, { ...config, labels: older }, ORIGIN);
    });
  });
});
