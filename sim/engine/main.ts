/**
 * Entry point of the engine simulator, a stand-in for `vllm serve` on hosts without GPUs.
 *
 *   node -r <root>/tools/ts-require.js <root>/sim/engine/main.ts serve <model-dir> [vllm flags]
 *   node ... main.ts --version
 *
 * Startup follows vLLM's order and prints vLLM 0.29.0's startup lines, each from the process that prints
 * it in vLLM (log.ts): parse flags, load the model config and tokenizer, resolve the platform and cache
 * geometry, "load weights" (startupDelayS × timeScale), open the NIXL side channel, and only then bind
 * the HTTP port, so connections are refused until the engine is ready. With NARWHAL_SIM_CONTROL_PORT the
 * control port (control.ts) opens last. See README.md.
 */
import { performance } from "node:perf_hooks";
import { describeNonDefault, parseServeArgs } from "./args";
import { BlockPool } from "./block-pool";
import { coefficientsFor, controlPort, loadSimConfig, SimConfigError } from "./config";
import { ControlServer } from "./control";
import { Engine } from "./engine";
import { ArgError, StartupError, USAGE } from "./errors";
import { availableMemoryLine, capacityLine, computeGeometry, defaultMaxNumSeqs } from "./geometry";
import { apiServer, configureLogging, engineCore, workerLogs } from "./log";
import { checkModelRuntime, loadModelInfo, resolveDtype, resolveMaxModelLen } from "./model";
import { NixlConnector } from "./nixl";
import { compatibilityFactors } from "./nixl-compat";
import { findNixlDistribution, NIXL_SEARCH_PATH } from "./nixl-runtime";
import { resolvePlatform } from "./platform";
import { Scheduler } from "./scheduler";
import { EngineServer } from "./server";
import { Tokenizer } from "./tokenizer";
import { EngineMetrics } from "./vllm-metrics";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function sideChannelPort(env: NodeJS.ProcessEnv): number {
  const raw = env.VLLM_NIXL_SIDE_CHANNEL_PORT;
  if (raw === undefined || raw === "") return 5600;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new StartupError("ValueError", `invalid literal for int() with base 10: '${raw}' (VLLM_NIXL_SIDE_CHANNEL_PORT)`);
  }
  return port;
}

/** What a signal must reach: filled in as startup progresses, so SIGTERM is clean at any point. */
interface Running {
  nixl: NixlConnector | null;
  server: EngineServer | null;
  control: ControlServer | null;
  engine: Engine | null;
  /** --shutdown-timeout, once the flags are parsed. */
  shutdownTimeoutS: number;
}

/** How often a draining shutdown looks for work left (vLLM's busy loop checks every step). */
const DRAIN_POLL_MS = 20;

/**
 * vLLM 0.29's SIGTERM (../shared/reference/vllm-restart-facts.md §5). With --shutdown-timeout 0 in-flight
 * work is aborted. Above 0 the engine drains: new requests are answered as aborted, the HTTP server and the
 * NIXL side channel keep serving, and the engine runs until no request is unfinished and no prefill's KV
 * blocks wait for a decode's read (or their lease ran out); the process manager kills it once the timeout
 * passes. Only then do the side channel and the HTTP server close.
 */
function handleSignals(running: Running): void {
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    const timeoutS = running.shutdownTimeoutS;
    const mode = timeoutS === 0 ? "abort" : "drain";
    apiServer.info("entrypoints/launcher.py:100", "[shutdown] API server: shutdown triggered");
    apiServer.info("entrypoints/launcher.py:116", `[shutdown] API server: stopping engine client mode=${mode} timeout=${timeoutS}s`);
    engineCore.info("v1/engine/core.py:1313", `[shutdown] EngineCore: trigger received signal=${signal}`);
    engineCore.info("v1/engine/core.py:1432", `[shutdown] EngineCore: start mode=${mode} timeout=${timeoutS}s`);
    const unfinished = () => (running.engine?.parts.scheduler.unfinished ?? 0) + (running.nixl?.heldRequests ?? 0);
    const drained = mode === "drain" && running.engine ? drain(running.engine, unfinished, timeoutS) : Promise.resolve();
    void drained.then(() => {
      engineCore.info("v1/engine/core.py:1463", "[shutdown] EngineCore: request processing complete; starting resource teardown");
      apiServer.write("INFO:     Shutting down");
      running.nixl?.close();
      const closed = Promise.all([running.server?.close(), running.control?.close()]);
      void closed.then(() => apiServer.write(`INFO:     Finished server process [${process.pid}]`, process.stdout, () => process.exit(0)));
    });
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGUSR2", () => running.engine?.toggleDead());
}

/** Runs until nothing is unfinished; after timeoutS the process manager's kill ends the wait. */
async function drain(engine: Engine, unfinished: () => number, timeoutS: number): Promise<void> {
  engine.shuttingDown = true;
  engineCore.info("v1/engine/core.py:1446", `[shutdown] EngineCore: draining in-flight requests count=${unfinished()} timeout=${timeoutS}s`);
  const killAt = performance.now() + timeoutS * 1000;
  while (unfinished() > 0) {
    if (performance.now() >= killAt) {
      apiServer.warn("v1/utils.py:607", "[shutdown] Process manager: force killing remaining processes count=1");
      return;
    }
    await sleep(DRAIN_POLL_MS);
  }
}

/** The attention backends vLLM's platform layer weighs, in its order of preference. */
function candidateBackends(selected: string): string {
  const all = selected.startsWith("ROCM")
    ? ["ROCM_AITER_MLA", "TRITON_MLA", "ROCM_ATTN", "TRITON_ATTN"]
    : selected.endsWith("MLA")
      ? ["FLASHMLA", "FLASH_ATTN_MLA", "FLASHINFER_MLA", "TRITON_MLA"]
      : ["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION"];
  return `[${all.filter((b) => b.endsWith("MLA") === selected.endsWith("MLA")).map((b) => `'${b}'`).join(", ")}]`;
}

async function serve(argv: readonly string[]): Promise<void> {
  const processStartS = performance.timeOrigin / 1000;
  const running: Running = { nixl: null, server: null, control: null, engine: null, shutdownTimeoutS: 0 };
  handleSignals(running);
  const env = process.env;
  configureLogging(env);
  const args = parseServeArgs(argv);
  running.shutdownTimeoutS = args.shutdownTimeout;
  const sim = loadSimConfig(env);
  const control = controlPort(env);
  apiServer.info("entrypoints/openai/api_server.py:1839", `vLLM API server version ${sim.version}`);
  apiServer.info("entrypoints/utils.py:233", `non-default args: ${describeNonDefault(args)}`);
  if (!args.apiKey && env.VLLM_API_KEY) args.apiKey = env.VLLM_API_KEY;

  const model = loadModelInfo(args);
  const dtype = resolveDtype(args.dtype, model);
  const maxModelLen = resolveMaxModelLen(args, model, env);
  apiServer.info("config/model.py:547", `Resolved architecture: ${model.architecture}`);
  apiServer.info("config/model.py:1510", `Using max model len ${maxModelLen}`);
  checkModelRuntime(args, model, env);
  const platform = resolvePlatform(sim, env, model.mla !== null, args.tensorParallelSize);
  const tokenizer = new Tokenizer(args.tokenizer ?? args.model, model.vocabSize, args.trustRemoteCode);
  const kv = args.kvTransferConfig;
  const geometry = computeGeometry({ args, model, dtype, maxModelLen, platform, kvTransfer: kv, env });
  const workers = workerLogs(args.tensorParallelSize);
  if (kv && !model.mla && !env.VLLM_KV_CACHE_LAYOUT) {
    engineCore.info("distributed/kv_transfer/kv_connector/v1/nixl/connector.py:126", "NixlConnector setting KV cache layout to LBHNC for better xfer performance.");
  }
  engineCore.info("v1/attention/backends/utils.py:285", `Using ${geometry.kvCacheLayout} KV cache layout.`);

  const maxNumSeqs = args.maxNumSeqs ?? defaultMaxNumSeqs(platform);
  const coefficients = coefficientsFor(sim, args.port);
  const scheduler = new Scheduler({
    maxNumSeqs,
    blockSize: geometry.blockSize,
    pool: new BlockPool(geometry.numGpuBlocks),
    coefficients,
    timeScale: sim.timeScale,
  });
  let nixl: NixlConnector | null = null;
  if (kv) {
    // With a KV connector vLLM disables the hybrid KV cache manager unless told otherwise.
    const hmaEnabled = args.disableHybridKvCacheManager === false;
    // vLLM's worker refuses the NixlConnector when the nixl package cannot be imported.
    const nixlDistribution = findNixlDistribution(sim.nixl.site ? [sim.nixl.site, ...NIXL_SEARCH_PATH] : NIXL_SEARCH_PATH);
    if (!nixlDistribution) throw new StartupError("RuntimeError", "NIXL is not available");
    nixl = new NixlConnector({
      config: kv,
      geometry,
      hashFactors: compatibilityFactors({ vllmVersion: sim.version, model: args.model, geometry, hmaEnabled }),
      sideChannelHost: env.VLLM_NIXL_SIDE_CHANNEL_HOST || "localhost",
      sideChannelPort: sideChannelPort(env),
      timeScale: sim.timeScale,
      endpointTimeoutS: sim.nixl.endpointTimeoutS,
      releaseBlocks: (blocks) => scheduler.release(blocks),
      logs: { core: engineCore, workers },
      nixl: nixlDistribution,
      // A segfaulted worker takes the engine down: the executor, then the front end, see the process die.
      // Writes to pipes and files are synchronous on Linux, so the lines are out before the exit.
      onWorkerCrash: (rank) => {
        if (args.tensorParallelSize > 1) engineCore.error("v1/executor/multiproc_executor.py:172", `Worker proc VllmWorker-${rank} died unexpectedly, shutting down executor.`);
        apiServer.error("v1/engine/core_client.py:691", "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.");
        process.exit(1);
      },
    });
    running.nixl = nixl;
    try {
      await nixl.start();
    } catch (err) {
      throw new StartupError("RuntimeError", (err as Error).message);
    }
  }
  for (const w of workers) {
    w.info(platform.vendor === "amd" ? "platforms/rocm.py:258" : "platforms/cuda.py:403", `Using ${geometry.attentionBackend} attention backend out of potential backends: ${candidateBackends(geometry.attentionBackend)}`);
  }
  nixl?.logWorkers();

  // "Loading weights" and profiling memory: the part of startup the simulator only waits through.
  const loadStarted = performance.now();
  await sleep(sim.startupDelayS * sim.timeScale * 1000);
  for (const w of workers) w.info("v1/worker/gpu_worker.py:298", availableMemoryLine(geometry));
  engineCore.info("v1/core/kv_cache_utils.py:1087", capacityLine(geometry));
  nixl?.logRegistration();

  const servedModelNames = args.servedModelNames.length > 0 ? args.servedModelNames : [args.model];
  const metrics = new EngineMetrics(
    servedModelNames[0],
    args,
    geometry,
    { running: () => scheduler.numRunning, waiting: () => scheduler.numWaiting, kvUsage: () => scheduler.pool.usage },
    processStartS,
  );
  const engine = new Engine({
    args,
    sim,
    model,
    tokenizer,
    geometry,
    platform,
    coefficients,
    maxNumSeqs,
    scheduler,
    nixl,
    metrics,
    servedModelNames,
    processStartS,
  });
  running.engine = engine;
  engineCore.info("v1/engine/core.py:210", `init engine (profile, create kv cache, warmup model) took ${((performance.now() - loadStarted) / 1000).toFixed(2)} s`);
  apiServer.debug("v1/metrics/loggers.py:207", `Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: ${geometry.numGpuBlocks}`);

  const server = new EngineServer(engine);
  running.server = server;
  try {
    await server.listen(args.host, args.port);
  } catch (err) {
    nixl?.close();
    const e = err as NodeJS.ErrnoException;
    throw new StartupError("OSError", `[Errno 98] error while attempting to bind on address ('${args.host ?? "0.0.0.0"}', ${args.port}): ${e.code === "EADDRINUSE" ? "address already in use" : e.message}`);
  }
  if (control !== null) {
    const controlServer = new ControlServer(engine);
    running.control = controlServer;
    try {
      await controlServer.listen(args.host, control);
    } catch (err) {
      throw new SimConfigError(`NARWHAL_SIM_CONTROL_PORT=${control}: cannot listen on ${args.host ?? "0.0.0.0"}:${control} (${(err as Error).message})`);
    }
  }
  apiServer.info("entrypoints/openai/api_server.py:1912", `Starting vLLM API server 0 on http://${args.host ?? "0.0.0.0"}:${args.port}`);
  apiServer.write(`INFO:     Started server process [${process.pid}]\nINFO:     Waiting for application startup.\nINFO:     Application startup complete.`);
}

/** Writes the failure the way vLLM's CLI would and returns the exit status. */
function report(err: unknown): number {
  if (err instanceof ArgError) {
    process.stderr.write(`${USAGE}\nvllm serve: error: ${err.message}\n`);
    return err.exitCode;
  }
  if (err instanceof StartupError) {
    engineCore.log("ERROR", "v1/engine/core.py:708", "EngineCore failed to start.");
    engineCore.write(`${err.pyType}: ${err.message}`, process.stderr);
    return err.exitCode;
  }
  if (err instanceof SimConfigError) {
    process.stderr.write(`narwhal engine simulator: ${err.message}\n`);
    return 1;
  }
  process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
  return 1;
}

function main(argv: readonly string[]): void {
  if (argv[0] === "--version") {
    try {
      process.stdout.write(`${loadSimConfig().version}\n`);
    } catch (err) {
      process.exitCode = report(err);
    }
    return;
  }
  if (argv[0] !== "serve") {
    const got = argv[0] === undefined ? "a subcommand is required" : `argument subparser: invalid choice: '${argv[0]}' (choose from 'serve')`;
    process.stderr.write(`usage: vllm [-h] [-v] {serve} ...\nvllm: error: ${got}\n`);
    process.exitCode = 2;
    return;
  }
  serve(argv.slice(1)).catch((err) => {
    const code = report(err);
    // Open listeners (a side channel bound before the failure) must not keep a failed start alive.
    process.stderr.write("", () => process.exit(code));
  });
}

main(process.argv.slice(2));
