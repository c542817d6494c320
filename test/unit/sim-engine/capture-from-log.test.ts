/**
 * Gate C's capture logic (lib/engine: startup log, config.json, /metrics) against what a live engine
 * simulator really prints and serves, compared with the geometry its control port says it resolved.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { assembleCacheLayout, cacheConfigFrom } from "../../../lib/engine/cache-layout";
import { checkStartupAgainstMetrics, ranksFromEngineLog } from "../../../lib/engine/layout-sources";
import { parseProcessStart, processStartScript } from "../../../lib/engine/log-source";
import { modelKvGeometry } from "../../../lib/engine/model-kv";
import { processStartTime, parsePrometheusText } from "../../../lib/engine/prometheus";
import { checkLogIsServingProcess, readEngineStartup } from "../../../lib/engine/startup-log";
import { expectSimulatorTruth } from "../../support/cache-truth";
import { http, KV_BOTH, makeModel, removeTemps, startEngine, stopAll, type SimEngine } from "./helpers";

const SUBJECT = { engineId: "e1", hostAlias: "local", url: "http://127.0.0.1" };

async function capture(engine: SimEngine, model: string, tp: number) {
  const origin = { host: "local", source: "stdout" };
  const startup = readEngineStartup(engine.stdout, origin);
  const metrics = (await http(`${engine.url}/metrics`)).text;
  // The log's API server is this very process: /proc's start and the simulator's process_start_time_seconds agree.
  const proc = parseProcessStart(execFileSync("/bin/sh", ["-c", processStartScript(startup.apiServer.pid)], { encoding: "utf8" }), "local", startup.apiServer.pid);
  checkLogIsServingProcess(startup, proc, processStartTime(parsePrometheusText(metrics))!, origin);
  const config = cacheConfigFrom(SUBJECT, metrics);
  checkStartupAgainstMetrics(startup, config, origin);
  const geometry = modelKvGeometry(readFileSync(join(model, "config.json")), "bfloat16", { host: "local", dir: model });
  const layout = assembleCacheLayout(SUBJECT, "engine-log", config, ranksFromEngineLog(startup, geometry, config), { blockSize: 16, tensorParallelSize: tp, dtype: "bfloat16", kvCacheDtype: "auto" });
  return { startup, layout, truth: (await http(`${engine.controlUrl}/cache-layout`)).json };
}

describe("capture from the simulator's own startup log", function () {
  this.timeout(60_000);
  after(async () => {
    await stopAll();
    removeTemps();
  });

  for (const tp of [1, 2]) {
    it(`finds every rank of a TP ${tp} engine with the geometry the simulator resolved`, async () => {
      const model = makeModel();
      const engine = await startEngine({ model, args: ["--served-model-name", "tiny", "-tp", String(tp), "--kv-transfer-config", KV_BOTH, "--max-model-len", "4096"] });
      const { startup, layout, truth } = await capture(engine, model, tp);
      expect(startup.apiServer).to.deep.equal({ pid: engine.proc.pid, version: "0.29.0" });
      expect(startup.ranks.map((r) => r.process)).to.deep.equal(tp === 1 ? ["EngineCore"] : ["Worker_TP0", "Worker_TP1"]);
      expect(startup.ranks.map((r) => r.availableKvCacheGiB)).to.deep.equal(Array(tp).fill(Number((truth.available_kv_cache_bytes / 2 ** 30).toFixed(2))));
      expect(startup.capacity).to.deep.equal({ tokens: truth.kv_cache_size_tokens, maxModelLen: 4096, maxConcurrency: Number(truth.max_concurrency.toFixed(2)) });
      expect(layout.tensorParallelSize).to.equal(truth.tensor_parallel_size);
      expectSimulatorTruth(layout, truth);
    });
  }

  it("prints the num_gpu_blocks line at DEBUG only, with vLLM's shortened paths, and the capture reads either", async () => {
    const model = makeModel();
    const args = ["--served-model-name", "tiny", "--kv-transfer-config", KV_BOTH, "--max-model-len", "4096"];
    const [info, debug] = await Promise.all([startEngine({ model, args }), startEngine({ model, args, env: { VLLM_LOGGING_LEVEL: "DEBUG" } })]);
    const blocks = (await http(`${debug.controlUrl}/cache-layout`)).json.num_gpu_blocks;
    expect(info.stdout).to.not.contain("num_gpu_blocks is:");
    expect(debug.stdout).to.contain(`) DEBUG `).and.contain(`[v1/metrics/loggers.py:207] Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: ${blocks}\n`);
    expect(debug.stdout).to.match(/\(EngineCore pid=\d+\) INFO \d\d-\d\d [\d:]+ \[v1\/worker\/gpu_worker\.py:298\] Available KV cache memory: [\d.]+ GiB\n/);
    for (const e of [info, debug]) expect((await capture(e, model, 1)).layout.ranks).to.have.length(1);
  });
});
