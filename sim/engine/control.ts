/**
 * The simulator's control port: what tests and benches need from a simulated engine that a real vLLM
 * does not offer, on a port of its own so that the engine port serves exactly vLLM 0.29's API (a
 * `/sim/...` request there is a 404 like any unknown path). It is opened only when
 * `NARWHAL_SIM_CONTROL_PORT` names a port, on the engine's `--host` address, after the engine port:
 *
 * - GET  /truth         the latency ground truth this engine plays (coefficients, time scale), so a
 *                        profile fit can be compared with what it should have found;
 * - GET  /cache-layout  the resolved KV cache geometry (what the capture should find in the engine's log,
 *                        config.json and /metrics) and the NIXL compatibility-hash inputs;
 * - POST /dead          marks the engine dead or alive without killing it: body {"dead": true|false}
 *                        (default true). SIGUSR2 toggles the same state.
 * - GET  /nixl          the NIXL model's state: the declared NIXL version and the one the crash rule
 *                        follows, the endpoint timeout, the remote engines held and their endpoints;
 * - POST /nixl          sets {"endpoint_timeout_s": simulated seconds, "nixl_version": "1.5.0"} (either),
 *                        so a test need not wait 180 simulated seconds nor build an image per NIXL release.
 *
 * Nothing on this port is guarded: it is the test harness's, never a client's or a router's.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Engine } from "./engine";
import { closeServer, listenOn, sendJson } from "./http";

export function truthDocument(engine: Engine): Record<string, unknown> {
  const p = engine.parts;
  const scale = p.sim.timeScale;
  const effective = Object.fromEntries(Object.entries(p.coefficients).map(([k, v]) => [k, v * scale]));
  return {
    time_scale: scale,
    port: p.args.port,
    coefficients: p.coefficients,
    /** Coefficients as a wall clock measures them (× time_scale). */
    effective_coefficients: effective,
    formulas: {
      prefill_s: "prefillA*n^2 + prefillB*n + prefillC (n = input tokens; the first token comes with the prefill)",
      decode_step_s: "decodeBase + decodeKv*resident_kv_tokens + decodeReq*active_requests (one token per active request per step)",
    },
    scheduling: {
      max_num_seqs: p.maxNumSeqs,
      prefill: "one at a time, FIFO",
      decode: "one batch; sequences join at the next step boundary",
    },
    startup_delay_s: p.sim.startupDelayS,
    version: p.sim.version,
    pid: process.pid,
    process_start_time_seconds: p.processStartS,
    dead: engine.dead,
    engine_id: p.nixl?.engineId ?? null,
    nixl: p.nixl?.tunables() ?? null,
  };
}

export function cacheLayoutDocument(engine: Engine): Record<string, unknown> {
  const { geometry: g, model, args, platform, nixl, servedModelNames } = engine.parts;
  const kv = args.kvTransferConfig;
  return {
    model: model.path,
    served_model_name: servedModelNames,
    architecture: model.architecture,
    dtype: g.dtype,
    cache_dtype: g.cacheDtype,
    cache_dtype_bytes: g.cacheDtypeBytes,
    num_hidden_layers: g.numHiddenLayers,
    kv_layers: g.kvLayers,
    num_kv_heads: g.numKvHeads,
    num_kv_heads_per_rank: g.numKvHeadsPerRank,
    head_dim: g.headDim,
    tensor_parallel_size: g.tensorParallelSize,
    block_size: g.blockSize,
    num_gpu_blocks: g.numGpuBlocks,
    kv_cache_layout: g.kvCacheLayout,
    attention_backend: g.attentionBackend,
    use_mla: g.useMla,
    bytes_per_token_per_layer: g.bytesPerTokenPerLayer,
    page_size_bytes: g.pageSizeBytes,
    bytes_per_token: g.bytesPerToken,
    bytes_per_token_all_ranks: g.bytesPerToken * g.tensorParallelSize,
    available_kv_cache_bytes: g.availableKvCacheBytes,
    gpu_memory_utilization: args.gpuMemoryUtilization,
    max_model_len: g.maxModelLen,
    max_concurrency: g.maxConcurrency,
    kv_cache_size_tokens: g.kvCacheSizeTokens,
    hybrid: model.convSsm ? { kda_layers: model.convSsm.kdaLayers, short_conv_kernel_size: model.convSsm.shortConvKernelSize } : null,
    gpu: { product: platform.product, memory_gib: platform.memoryGiB, vendor: platform.vendor },
    visible_devices: platform.visibleDevices,
    visibility_env: platform.visibilitySource,
    kv_connector: kv?.kvConnector ?? null,
    kv_role: kv?.kvRole ?? null,
    engine_id: nixl?.engineId ?? null,
    side_channel: nixl ? { host: nixl.sideChannel.host, port: nixl.sideChannel.port } : null,
    compatibility_hash: nixl?.compatHash ?? null,
    hash_factors: nixl?.hashFactors ?? null,
  };
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? {} : JSON.parse(text);
}

/** The control port's HTTP server; see the header. */
export class ControlServer {
  readonly http: Server;

  constructor(private readonly engine: Engine) {
    this.http = createServer((req, res) => void this.dispatch(req, res));
  }

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const route = `${req.method ?? "GET"} ${new URL(req.url ?? "/", "http://control").pathname}`;
    try {
      switch (route) {
        case "GET /truth":
          return sendJson(res, 200, truthDocument(this.engine));
        case "GET /cache-layout":
          return sendJson(res, 200, cacheLayoutDocument(this.engine));
        case "POST /dead": {
          const wanted = ((await readJson(req)) as { dead?: unknown } | null)?.dead;
          if (wanted !== undefined && typeof wanted !== "boolean") return sendJson(res, 400, { detail: "'dead' must be true or false" });
          return sendJson(res, 200, { dead: this.engine.toggleDead(wanted ?? true) });
        }
        case "GET /nixl":
        case "POST /nixl": {
          const nixl = this.engine.parts.nixl;
          if (!nixl) return sendJson(res, 409, { detail: "this engine has no --kv-transfer-config, so no NIXL connector" });
          if (route === "GET /nixl") return sendJson(res, 200, nixl.tunables());
          const body = ((await readJson(req)) ?? {}) as { endpoint_timeout_s?: unknown; nixl_version?: unknown };
          const unknown = Object.keys(body).filter((k) => k !== "endpoint_timeout_s" && k !== "nixl_version");
          if (unknown.length > 0) return sendJson(res, 400, { detail: `unknown key(s) ${unknown.join(", ")}; POST /nixl takes endpoint_timeout_s and nixl_version` });
          if (body.endpoint_timeout_s !== undefined && typeof body.endpoint_timeout_s !== "number") return sendJson(res, 400, { detail: "'endpoint_timeout_s' must be a number of simulated seconds" });
          if (body.nixl_version !== undefined && typeof body.nixl_version !== "string") return sendJson(res, 400, { detail: "'nixl_version' must be a version string such as 1.5.0" });
          return sendJson(res, 200, nixl.tunables({ endpointTimeoutS: body.endpoint_timeout_s, nixlVersion: body.nixl_version }));
        }
        default:
          return sendJson(res, 404, { detail: `no control route ${route}; the routes are GET /truth, GET /cache-layout, POST /dead, GET /nixl, POST /nixl` });
      }
    } catch (err) {
      sendJson(res, 400, { detail: (err as Error).message });
    }
  }

  listen(host: string | null, port: number): Promise<void> {
    return listenOn(this.http, host, port);
  }

  close(): Promise<void> {
    return closeServer(this.http);
  }
}
