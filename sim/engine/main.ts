/**
 * Entry point of the engine simulator, a stand-in for `vllm serve` on hosts without GPUs.
 *
 *   node -r <root>/tools/ts-require.js <root>/sim/engine/main.ts serve <model-dir> [vllm flags]
 *   node ... main.ts --version
 *
 * Startup follows vLLM's order: parse flags, load the model config and tokenizer, resolve the platform
 * and cache geometry, "load weights" (startupDelayS × timeScale), open the NIXL side channel, and only
 * then bind the HTTP port, so connections are refused until the engine is ready. See README.md.
 */
import { performance } from "node:perf_hooks";
import { describeNonDefault, parseServeArgs } from "./args";
import { BlockPool } from "./block-pool";
import { coefficientsFor, loadSimConfig, SimConfigError } from "./config";
import { Engine } from "./engine";
import { ArgError, StartupError, USAGE } from "./errors";
import { computeGeometry, defaultMaxNumSeqs, geometryLogLines } from "./geometry";
import { info } from "./log";
import { checkModelRuntime, loadModelInfo, resolveDtype, resolveMaxModelLen } from "./model";
import { NixlConnector } from "./nixl";
import { compatibilityFactors } from "./nixl-compat";
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
  engine: Engine | null;
}

function handleSignals(running: Running): void {
  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    process.stdout.write("INFO:     Shutting down\n");
    running.nixl?.close();
    const closed = running.server ? running.server.close() : Promise.resolve();
    void closed.then(() => process.stdout.write(`INFO:     Finished server process [${process.pid}]\n`, () => process.exit(0)));
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
  process.on("SIGUSR2", () => running.engine?.toggleDead());
}

async function serve(argv: readonly string[]): Promise<void> {
  const processStartS = performance.timeOrigin / 1000;
  const running: Running = { nixl: null, server: null, engine: null };
  handleSignals(running);
  const env = process.env;
  const args = parseServeArgs(argv);
  const sim = loadSimConfig(env);
  info("api_server.py:1839", `vLLM API server version ${sim.version}`);
  info("utils.py:233", `non-default args: ${describeNonDefault(args)}`);
  if (!args.apiKey && env.VLLM_API_KEY) args.apiKey = env.VLLM_API_KEY;

  const model = loadModelInfo(args);
  const dtype = resolveDtype(args.dtype, model);
  const maxModelLen = resolveMaxModelLen(args, model, env);
  info("model.py:547", `Resolved architecture: ${model.architecture}`);
  info("model.py:1510", `Using max model len ${maxModelLen}`);
  checkModelRuntime(args, model, env);
  const platform = resolvePlatform(sim, env, model.mla !== null, args.tensorParallelSize);
  const tokenizer = new Tokenizer(args.tokenizer ?? args.model, model.vocabSize, args.trustRemoteCode);
  const kv = args.kvTransferConfig;
  const geometry = computeGeometry({ args, model, dtype, maxModelLen, platform, kvTransfer: kv, env });
  if (kv && !env.VLLM_KV_CACHE_LAYOUT) info("base.py:160", "NixlConnector setting KV cache layout to HND for better xfer performance.");
  info("cuda.py:403", `Using ${geometry.attentionBackend} backend.`);

  // "Loading weights": the part of startup the simulator only waits through.
  const loadStarted = performance.now();
  await sleep(sim.startupDelayS * sim.timeScale * 1000);
  for (const [source, line] of geometryLogLines(geometry)) info(source, line);
  info("llm_engine.py:312", `vllm cache_config_info with initialization after num_gpu_blocks is: ${geometry.numGpuBlocks}`);

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
    nixl = new NixlConnector({
      config: kv,
      geometry,
      hashFactors: compatibilityFactors({ vllmVersion: sim.version, model: args.model, geometry, crossLayersBlocks: kv.enableCrossLayersBlocks, hmaEnabled }),
      sideChannelHost: env.VLLM_NIXL_SIDE_CHANNEL_HOST || "localhost",
      sideChannelPort: sideChannelPort(env),
      timeScale: sim.timeScale,
      releaseBlocks: (blocks) => scheduler.release(blocks),
    });
    running.nixl = nixl;
    try {
      await nixl.start();
    } catch (err) {
      throw new StartupError("RuntimeError", (err as Error).message);
    }
  }
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
  info("core.py:210", `init engine (profile, create kv cache, warmup model) took ${((performance.now() - loadStarted) / 1000).toFixed(2)} seconds`);

  const server = new EngineServer(engine);
  running.server = server;
  try {
    await server.listen(args.host, args.port);
  } catch (err) {
    nixl?.close();
    const e = err as NodeJS.ErrnoException;
    throw new StartupError("OSError", `[Errno 98] error while attempting to bind on address ('${args.host ?? "0.0.0.0"}', ${args.port}): ${e.code === "EADDRINUSE" ? "address already in use" : e.message}`);
  }
  info("api_server.py:1912", `Starting vLLM API server 0 on http://${args.host ?? "0.0.0.0"}:${args.port}`);
  process.stdout.write(`INFO:     Started server process [${process.pid}]\nINFO:     Waiting for application startup.\nINFO:     Application startup complete.\n`);
}

/** Writes the failure the way vLLM's CLI would and returns the exit status. */
function report(err: unknown): number {
  if (err instanceof ArgError) {
    process.stderr.write(`${USAGE}\nvllm serve: error: ${err.message}\n`);
    return err.exitCode;
  }
  if (err instanceof StartupError) {
    process.stderr.write(`ERROR [core.py:708] EngineCore failed to start.\n${err.pyType}: ${err.message}\n`);
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
