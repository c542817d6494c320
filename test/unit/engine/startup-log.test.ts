import { expect } from "chai";
import { checkLogIsServingProcess, logLines, readEngineStartup, type LogOrigin } from "../../../lib/engine/startup-log";
import { thrown, VLLM_TP2_LOG } from "./helpers";

const ORIGIN: LogOrigin = { host: "gpu-a", source: "/runs/e1/engine.log" };

/** The fixture without the lines `drop` matches. */
const without = (drop: (line: string) => boolean) =>
  VLLM_TP2_LOG.split("\n")
    .filter((l) => !drop(l))
    .join("\n");

/** A TP 1 engine: the worker code runs in the engine core, so its lines carry the engine core's prefix. */
const TP1_LOG = `(APIServer pid=77) INFO 02-01 09:00:00 [api_server.py:1839] vLLM API server version 0.29.0
(APIServer pid=77) INFO 02-01 09:00:00 [utils.py:233] non-default args: {'model': '/model', 'kv_transfer_config': KVTransferConfig(kv_connector='NixlConnector')}
(EngineCore_DP0 pid=90) INFO 02-01 09:00:04 [connector.py:126] NixlConnector setting KV cache layout to LBHNC for better xfer performance.
(EngineCore_DP0 pid=90) INFO 02-01 09:00:04 [utils.py:285] Using LBHNC KV cache layout.
(EngineCore_DP0 pid=90) INFO 02-01 09:00:05 [cuda.py:403] Using FLASHINFER attention backend out of potential backends: ['FLASHINFER', 'FLASH_ATTN']
(EngineCore_DP0 pid=90) INFO 02-01 09:00:05 [base_worker.py:231] Initializing NIXL worker 0b9d
(EngineCore_DP0 pid=90) INFO 02-01 09:00:20 [gpu_worker.py:298] Available KV cache memory: 60.10 GiB
(EngineCore_DP0 pid=90) INFO 02-01 09:00:21 [kv_cache_utils.py:1087] GPU KV cache size: 1,966,080 tokens, Maximum concurrency for 8,192 tokens per request: 240.00 x
(APIServer pid=77) INFO 02-01 09:00:30 [api_server.py:1912] Starting vLLM API server 0 on http://10.0.0.12:8200
`;

describe("engine startup log (vLLM 0.29.0 lines, per TP rank)", () => {
  it("reads each worker rank of the reference lines, and names every line it read", () => {
    const s = readEngineStartup(VLLM_TP2_LOG, ORIGIN);
    expect(s.apiServer).to.deep.equal({ pid: 1001, version: "0.29.0" });
    expect(s.tensorParallelSize).to.equal(2);
    expect(s.capacity).to.deep.equal({ tokens: 76083792, maxModelLen: 4096, maxConcurrency: 18575.14 });
    expect(s.ranks.map(({ lines: _lines, ...r }) => r)).to.deep.equal([
      { rank: 0, process: "Worker_TP0", pid: 1201, attentionBackend: "FLASH_ATTN", kvCacheLayout: "LBHNC", availableKvCacheGiB: 72.55, nixlEngineId: "5f0c2d8e-3b1a-4c6f-9e27-0d4b8a71c3e5" },
      { rank: 1, process: "Worker_TP1", pid: 1202, attentionBackend: "FLASH_ATTN", kvCacheLayout: "LBHNC", availableKvCacheGiB: 72.56, nixlEngineId: "5f0c2d8e-3b1a-4c6f-9e27-0d4b8a71c3e5" },
    ]);
    expect(s.ranks[1].lines.map((l) => l.n)).to.deep.equal([11, 13, 15, 17, 18]);
    expect(s.lines.map((l) => l.n)).to.deep.equal([2, 3, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    // The flags line is kept only as far as the capture read it.
    expect(s.lines[1].text).to.equal("(APIServer pid=1001) INFO 01-31 12:00:02 [utils.py:233] non-default args: {… 'tensor_parallel_size': 2 …}");
    expect(s.lines[12].text).to.equal("(Worker_TP0 pid=1201) INFO 01-31 12:00:31 [gpu_worker.py:298] Available KV cache memory: 72.55 GiB");
  });

  it("reads a TP 1 engine's worker lines from the engine core (EngineCore_DP<n>), TP 1 when no flag says otherwise", () => {
    const s = readEngineStartup(TP1_LOG, { host: "gpu-b", source: "docker logs 0123456789ab" });
    expect(s.tensorParallelSize).to.equal(1);
    expect(s.ranks.map(({ lines: _l, ...r }) => r)).to.deep.equal([
      { rank: 0, process: "EngineCore_DP0", pid: 90, attentionBackend: "FLASHINFER", kvCacheLayout: "LBHNC", availableKvCacheGiB: 60.1, nixlEngineId: "0b9d" },
    ]);
    expect(s.capacity).to.deep.equal({ tokens: 1966080, maxModelLen: 8192, maxConcurrency: 240 });
  });

  it("counts the TP workers when the flags line does not name the size", () => {
    const s = readEngineStartup(without((l) => l.includes("non-default args")), ORIGIN);
    expect(s.tensorParallelSize).to.equal(2);
    expect(s.ranks.map((r) => r.rank)).to.deep.equal([0, 1]);
  });

  it("takes the engine core's layout when a rank names none, and the NIXL worker's backend line when it logged no platform line", () => {
    const s = readEngineStartup(without((l) => /Detected kv cache layout|attention backend out of potential/.test(l)), ORIGIN);
    expect(s.ranks.map((r) => [r.kvCacheLayout, r.attentionBackend])).to.deep.equal([
      ["LBHNC", "FLASH_ATTN"],
      ["LBHNC", "FLASH_ATTN"],
    ]);
  });

  it("reads colour-decorated lines and CRLF endings as the same lines", () => {
    const coloured = VLLM_TP2_LOG.replace(/^\((\w+) pid=(\d+)\) (\w+)/gm, "\x1b[1;36m($1 pid=$2)\x1b[0;0m \x1b[32m$3\x1b[0m").replace(/\n/g, "\r\n");
    const s = readEngineStartup(coloured, ORIGIN);
    expect(s.ranks.map((r) => r.availableKvCacheGiB)).to.deep.equal([72.55, 72.56]);
    expect(logLines(coloured)[1].text).to.equal(logLines(VLLM_TP2_LOG)[1].text);
  });

  describe("a log that is not the serving start's whole log is refused, naming the host and the file", () => {
    it("a log rotated or truncated and written on: its first vLLM line is not the API server's startup", () => {
      const rotated = VLLM_TP2_LOG.split("\n").slice(20).join("\n");
      const err = thrown(() => readEngineStartup(rotated, ORIGIN));
      expect(err.code).to.equal("NARWHAL_CACHE_LOG_ROTATED");
      expect(err.message).to.equal(
        'host gpu-a: /runs/e1/engine.log: the log\'s first vLLM line (line 1, "(Worker_TP0 pid=1201) INFO 01-31 12:00:33 [base_worker.py:702] Registering KV_Caches. use_mla: False, kv_buffer_device: cuda, use_host_buffer: False") ' +
          "is not the API server's startup line 'vLLM API server version …': it was rotated or truncated since the engine started, so the startup lines it needs are gone; restart the engine to capture its cache",
      );
    });

    it("a file truncated while the engine kept writing (copytruncate): it begins with NUL bytes", () => {
      const err = thrown(() => readEngineStartup("\0".repeat(4096) + "(APIServer pid=1001) INFO:     10.0.0.5:51234 - \"GET /health HTTP/1.1\" 200 OK\n", ORIGIN));
      expect(err.code).to.equal("NARWHAL_CACHE_LOG_ROTATED");
      expect(err.message).to.equal(
        "host gpu-a: /runs/e1/engine.log: the log begins with 4096 NUL bytes: it was truncated while the engine kept writing (copytruncate rotation), so its startup lines are gone; restart the engine to capture its cache",
      );
    });

    it("an empty log", () => {
      const err = thrown(() => readEngineStartup("", ORIGIN));
      expect([err.code, err.message]).to.deep.equal([
        "NARWHAL_CACHE_LOG_ROTATED",
        "host gpu-a: /runs/e1/engine.log: the log is empty: it was truncated or replaced since the engine started (the engine writes its startup lines before it serves)",
      ]);
    });

    it("another start's log: its API server is gone, or started at another time than the serving engine", () => {
      const s = readEngineStartup(VLLM_TP2_LOG, ORIGIN);
      const serving = Date.UTC(2026, 0, 31, 12, 0, 0) / 1000;
      checkLogIsServingProcess(s, { running: true, startedAtS: serving + 1.2 }, serving, ORIGIN);
      const gone = thrown(() => checkLogIsServingProcess(s, { running: false }, serving, ORIGIN));
      expect([gone.code, gone.message]).to.deep.equal([
        "NARWHAL_CACHE_LOG_ROTATED",
        "host gpu-a: /runs/e1/engine.log: the log was written by API server pid 1001, which no longer runs: it is another start's log, not the serving engine's (started 2026-01-31T12:00:00.000Z)",
      ]);
      const other = thrown(() => checkLogIsServingProcess(s, { running: true, startedAtS: serving - 600 }, serving, ORIGIN));
      expect([other.code, other.message]).to.deep.equal([
        "NARWHAL_CACHE_LOG_ROTATED",
        "host gpu-a: /runs/e1/engine.log: the log was written by API server pid 1001, started 2026-01-31T11:50:00.000Z, but the serving engine started 2026-01-31T12:00:00.000Z (process_start_time_seconds): it is another start's log",
      ]);
    });

    it("a log holding a second start", () => {
      const twice = VLLM_TP2_LOG + VLLM_TP2_LOG.replace(/pid=1001/g, "pid=3003");
      const err = thrown(() => readEngineStartup(twice, ORIGIN));
      expect([err.code, err.message]).to.deep.equal([
        "NARWHAL_CACHE_LOG_ROTATED",
        "host gpu-a: /runs/e1/engine.log: the log holds a second engine start at line 30 (API server pid 3003): it is not the log of one start",
      ]);
    });

    it("a log with no vLLM process line at all", () => {
      const err = thrown(() => readEngineStartup("Traceback (most recent call last):\nModuleNotFoundError: No module named 'vllm'\n", ORIGIN));
      expect([err.code, err.message]).to.deep.equal([
        "NARWHAL_CACHE_LOG",
        "host gpu-a: /runs/e1/engine.log: no line of the log has a vLLM process prefix such as (APIServer pid=…): it is not a vLLM 0.29 engine's log",
      ]);
    });
  });

  describe("a log missing a line the capture needs is refused, naming the line", () => {
    it("no capacity line from the engine core (and says when only part of the log was read)", () => {
      const err = thrown(() => readEngineStartup(without((l) => l.includes("GPU KV cache size")), { ...ORIGIN, readBytes: 100, totalBytes: 900 }));
      expect([err.code, err.message]).to.deep.equal([
        "NARWHAL_CACHE_LOG",
        "host gpu-a: /runs/e1/engine.log: the engine core never logged 'GPU KV cache size: N tokens, …' in the first 100 bytes read: its cache was not sized, or the log is not a vLLM 0.29 engine's",
      ]);
    });

    it("a rank with no attention backend line", () => {
      const err = thrown(() => readEngineStartup(without((l) => l.startsWith("(Worker_TP1") && /backend/.test(l)), ORIGIN));
      expect(err.message).to.equal(
        "host gpu-a: /runs/e1/engine.log: rank 1 (Worker_TP1 pid=1202) logged no attention backend ('Using <BACKEND> attention backend …' or 'Detected attention backend(s) […]')",
      );
    });

    it("a rank with no layout line where the engine core names none either", () => {
      const err = thrown(() => readEngineStartup(without((l) => /Detected kv cache layout|Using LBHNC KV cache layout/.test(l)), ORIGIN));
      expect(err.message).to.equal(
        "host gpu-a: /runs/e1/engine.log: rank 0 (Worker_TP0 pid=1201) logged no KV cache layout ('Detected kv cache layout …'), and neither did the engine core ('Using … KV cache layout.')",
      );
    });

    it("refuses data-parallel or pipeline-parallel workers rather than guessing their rank", () => {
      const err = thrown(() => readEngineStartup(VLLM_TP2_LOG.replace(/Worker_TP1/g, "Worker_PP1_TP0"), ORIGIN));
      expect(err.message).to.equal("host gpu-a: /runs/e1/engine.log: line 11 is from Worker_PP1_TP0: the capture reads engines with one data-parallel rank and one pipeline stage");
    });
  });
});
