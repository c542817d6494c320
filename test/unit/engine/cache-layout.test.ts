import { expect } from "chai";
import { readFileSync } from "node:fs";
import { join } from "node:path";
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
import type { EngineError } from "../../../lib/engine/errors";
import { ranksFromEngineLog, ranksFromSimLayout, type ModelKvGeometry } from "../../../lib/engine/layout-sources";
import { FIXTURES, RECORDED, SIM_STDOUT, SUBJECT } from "./helpers";

const EXPECTED = { blockSize: 16, tensorParallelSize: 2, dtype: "bfloat16", kvCacheDtype: "auto" };
/** Computed independently with Python's json.dumps(sort_keys=True, separators=(",", ":")) and hashlib. */
const TP2_DIGEST = "sha256:c3492dcd78197b9169ec581d69f0a40939a006b70e718f70fd6cd9bede96113c";
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
  kvCacheLayout: "HND",
  attentionBackend: "FLASH_ATTN",
  useMla: false,
  bytesPerTokenPerLayer: 256,
  pageSizeBytes: 4096,
  bytesPerToken: 1024,
});

function thrown(fn: () => unknown): EngineError {
  try {
    fn();
  } catch (err) {
    return err as EngineError;
  }
  throw new Error("expected an error");
}

describe("engine cache layout", () => {
  const config: CacheConfigFacts = cacheConfigFrom(SUBJECT, RECORDED["/metrics"].body);
  const simDoc = JSON.parse(RECORDED["/sim/cache-layout"].body);

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

  it("expands the simulator's layout document to one record per TP rank", () => {
    expect(ranksFromSimLayout(simDoc)).to.deep.equal({
      tensorParallelSize: 2,
      ranks: [rank(0), rank(1)],
      nixl: { engineId: "ef76ea90-ccd2-4e73-a1c8-3f887e8ff86c", compatibilityHash: "45f9742ac6c6bbe141bbd0b4bfdd758750635822dee8aa3f1fa5ddb7fb4a01f9" },
    });
    const err = thrown(() => ranksFromSimLayout({ ...simDoc, head_dim: "64", block_size: undefined }));
    expect(err.code).to.equal("NARWHAL_CACHE_LAYOUT_SOURCE");
    expect(err.message).to.equal(
      "/sim/cache-layout is not the simulator's layout document: head_dim: Invalid input: expected number, received string; block_size: Invalid input: expected number, received undefined",
    );
  });

  it("assembles the checked layout and its digest", () => {
    const layout = assembleCacheLayout(SUBJECT, "sim-endpoint", config, ranksFromSimLayout(simDoc), EXPECTED);
    expect(layout.ranks).to.deep.equal([rank(0), rank(1)]);
    expect(layout).to.include({ source: "sim-endpoint", tensorParallelSize: 2, bytesPerTokenAllRanks: simDoc.bytes_per_token_all_ranks });
    expect(cacheLayoutDigest(layout)).to.equal(TP2_DIGEST);
  });

  it("keeps the digest to geometry: another source or NIXL engine id gives the same digest", () => {
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
    const err = thrown(() => assembleCacheLayout(SUBJECT, "sim-endpoint", config, report, { blockSize: 128, tensorParallelSize: 2, dtype: "half", kvCacheDtype: "fp8" }));
    expect(err.code).to.equal("NARWHAL_CACHE_LAYOUT_MISMATCH");
    expect(err.message).to.equal(
      [
        "engine e1 on host gpu-a: the live cache layout at http://127.0.0.1:8100 (source sim-endpoint) does not match its plan; nothing was captured:",
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
    const report = ranksFromSimLayout(simDoc);
    expect(layoutProblems(config, report, { ...EXPECTED, dtype: "auto" })).to.deep.equal([]);
    expect(layoutProblems(config, report, { ...EXPECTED, dtype: "bf16" })).to.deep.equal([]);
  });

  describe("engine-log source (a real vLLM)", () => {
    it("finds both TP workers of a vLLM startup log and the same geometry as the simulator reports", () => {
      const log = readFileSync(join(FIXTURES, "vllm-tp2-startup.log"), "utf8");
      const report = ranksFromEngineLog(log, MODEL, config, 2);
      expect(report.ranks).to.deep.equal([rank(0), rank(1)]);
      expect(cacheLayoutDigest(assembleCacheLayout(SUBJECT, "engine-log", config, report, EXPECTED))).to.equal(TP2_DIGEST);
    });

    it("refuses when a worker never sized its cache", () => {
      const log = readFileSync(join(FIXTURES, "vllm-tp2-startup.log"), "utf8")
        .split("\n")
        .filter((l) => !(l.startsWith("(Worker_TP1") && l.includes("Available KV cache memory")))
        .join("\n");
      expect(layoutProblems(config, ranksFromEngineLog(log, MODEL, config, 2), EXPECTED)).to.deep.equal(["rank 1 of 2 missing"]);
    });

    it("reads a TP 1 engine's unprefixed lines as rank 0 (the simulator's own log)", () => {
      const report = ranksFromEngineLog(SIM_STDOUT, MODEL, config, 1);
      expect(report.ranks).to.have.length(1);
      expect(report.ranks[0]).to.include({ rank: 0, kvCacheLayout: "HND", attentionBackend: "FLASH_ATTN", numKvHeadsPerRank: 2, bytesPerTokenPerLayer: 512 });
      expect(ranksFromEngineLog(SIM_STDOUT, MODEL, config, 2).ranks).to.deep.equal([]);
    });

    it("sizes fp8 and MLA caches by vLLM's formulas", () => {
      const fp8 = ranksFromEngineLog(SIM_STDOUT, MODEL, { ...config, cacheDtype: "fp8" }, 1).ranks[0];
      expect(fp8).to.include({ bytesPerTokenPerLayer: 256, pageSizeBytes: 4096, bytesPerToken: 1024 });
      const mla = ranksFromEngineLog(SIM_STDOUT, { ...MODEL, mla: { kvLoraRank: 512, qkRopeHeadDim: 64 } }, config, 1).ranks[0];
      expect(mla).to.include({ useMla: true, bytesPerTokenPerLayer: 1152 });
    });
  });
});
