/**
 * The NixlConnector, both halves:
 *
 * - producer (P, the prefill leg): after a request with `do_remote_decode` finishes, its KV blocks stay
 *   allocated under a lease (kv_lease_duration, scaled by the time scale) and the response carries the
 *   handoff (`kv_transfer_params`). P answers the side channel: its handshake metadata, and reads of the
 *   held blocks (streaming their bytes, then freeing them).
 * - consumer (D, the decode leg): for `do_remote_prefill`, D handshakes with remote_host:remote_port
 *   (compatibility hash, engine id, TP/layout/page checks as in vLLM's _validate_remote_agent_handshake),
 *   reads the blocks, and only then decodes.
 *
 * Known vLLM behaviour reproduced on purpose (issue #38840): D caches a peer's handshake metadata per
 * host:port and never refreshes it. When P restarts on the same host:port with a new engine_id, every
 * handoff from the new P fails on D with an AssertionError until D itself restarts.
 */
import type { Server } from "node:net";
import type { CacheGeometry } from "./geometry";
import type { KVTransferConfig } from "./kv-transfer-config";
import { now } from "./latency";
import type { ProcessLog } from "./log";
import { compatibilityHash } from "./nixl-compat";
import { listenSideChannel, type HandlerResult, type Message, SideChannelClient } from "./side-channel";

/** vLLM sets a 5 s receive timeout on the handshake socket. */
const HANDSHAKE_TIMEOUT_MS = 5000;
/** The simulator never streams more than this per read, whatever the geometry says. */
const MAX_PAYLOAD_BYTES = 1024 * 2 ** 20;
/** How many expired/finished request ids P remembers, to tell "expired" from "unknown". */
const TOMBSTONES = 10_000;

/** NixlAgentMetadata as the handshake carries it. */
export interface AgentMetadata {
  engine_id: string;
  kv_caches_base_addr: number[];
  device_id: number;
  num_blocks: number;
  block_lens: number[];
  kv_cache_layout: string;
  block_size: number;
  attn_backend_name: string;
  tp_size: number;
  use_mla: boolean;
  num_kv_heads: number;
}

/** The handoff P returns (newest vLLM form: per-group block lists, request id, token count, expiry). */
export interface KvTransferParams {
  do_remote_prefill: true;
  do_remote_decode: false;
  remote_block_ids: number[][];
  remote_engine_id: string;
  remote_request_id: string;
  remote_host: string;
  remote_port: number;
  tp_size: number;
  remote_num_tokens: number;
  remote_blocks_expiry_time: number;
}

/** A failed KV load on D. `failureType` follows vLLM's _log_failure (handshake_failed, transfer_failed). */
export class KvLoadError extends Error {
  readonly code = "KV_LOAD_FAILED";
  constructor(
    readonly failureType: string,
    message: string,
  ) {
    super(message);
  }
}

export interface TransferStats {
  seconds: number;
  /** Bytes the real engines would move (all TP ranks). */
  bytes: number;
  /** Bytes that actually crossed the simulated link (bytes × time scale). */
  wireBytes: number;
  numBlocks: number;
}

export interface NixlOptions {
  config: KVTransferConfig;
  geometry: CacheGeometry;
  hashFactors: Record<string, string | number | boolean>;
  sideChannelHost: string;
  sideChannelPort: number;
  timeScale: number;
  /** Gives held blocks back to the scheduler's pool. */
  releaseBlocks: (blocks: readonly number[]) => void;
  /** Where vLLM's connector halves log: the scheduler in the engine core, a worker per TP rank. */
  logs: { core: ProcessLog; workers: ReadonlyArray<ProcessLog> };
}

/** The connector's sources below vllm/ (distributed/kv_transfer/kv_connector/v1/nixl/). */
const NIXL = "distributed/kv_transfer/kv_connector/v1/nixl";

/** Python's repr of a list of strings: ['FLASH_ATTN']. */
const pyList = (xs: readonly string[]) => `[${xs.map((x) => `'${x}'`).join(", ")}]`;
const pyBool = (b: boolean) => (b ? "True" : "False");

interface Held {
  blocks: number[];
  numTokens: number;
  expiresAt: number;
  timer: NodeJS.Timeout | null;
}

function flatten(ids: unknown): number[] | null {
  if (!Array.isArray(ids)) return null;
  const out: number[] = [];
  for (const x of ids) {
    if (typeof x === "number") out.push(x);
    else if (Array.isArray(x) && x.every((y) => typeof y === "number")) out.push(...(x));
    else return null;
  }
  return out;
}

export class NixlConnector {
  readonly engineId: string;
  readonly compatHash: string;
  private readonly held = new Map<string, Held>();
  private readonly gone = new Map<string, "expired" | "transferred">();
  /** Handshake metadata per "host:port", never refreshed (vLLM #38840). */
  private readonly peers = new Map<string, AgentMetadata>();
  private server: Server | null = null;

  constructor(private readonly o: NixlOptions) {
    this.engineId = o.config.engineId;
    this.compatHash = compatibilityHash(o.hashFactors);
  }

  get sideChannel(): { host: string; port: number } {
    return { host: this.o.sideChannelHost, port: this.o.sideChannelPort };
  }

  get hashFactors(): Record<string, string | number | boolean> {
    return this.o.hashFactors;
  }

  get leaseMs(): number {
    return this.o.config.kvLeaseDurationS * this.o.timeScale * 1000;
  }

  get heldRequests(): number {
    return this.held.size;
  }

  metadata(): AgentMetadata {
    const g = this.o.geometry;
    return {
      engine_id: this.engineId,
      // Fake but stable device addresses, one region per KV layer.
      kv_caches_base_addr: Array.from({ length: g.kvLayers }, (_, i) => 0x7f0000000000 + i * g.pageSizeBytes * g.numGpuBlocks),
      device_id: 0,
      num_blocks: g.numGpuBlocks,
      block_lens: Array.from({ length: g.kvLayers }, () => g.pageSizeBytes),
      kv_cache_layout: g.kvCacheLayout,
      block_size: g.blockSize,
      attn_backend_name: g.attentionBackend,
      tp_size: g.tensorParallelSize,
      use_mla: g.useMla,
      num_kv_heads: g.numKvHeads,
    };
  }

  /** Binds the side channel (a busy port fails startup, like ZMQ's "Address already in use"). */
  async start(): Promise<void> {
    const { sideChannelHost: host, sideChannelPort: port } = this.o;
    try {
      this.server = await listenSideChannel(host, port, (msg) => this.handle(msg));
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      const reason = e.code === "EADDRINUSE" ? "Address already in use" : e.message;
      throw new Error(`zmq.error.ZMQError: ${reason} (addr='tcp://${host}:${port}')`);
    }
    this.o.logs.core.info(`${NIXL}/base_scheduler.py:164`, `Initializing NIXL Scheduler ${this.engineId}`);
  }

  /** What each TP worker's connector logs when it is created (base_worker.py `__init__`). */
  logWorkers(): void {
    const g = this.o.geometry;
    for (const w of this.o.logs.workers) {
      w.info(`${NIXL}/base_worker.py:231`, `Initializing NIXL worker ${this.engineId}`);
      w.info(`${NIXL}/base_worker.py:318`, `Detected attention backend(s) ${pyList([g.attentionBackend])}`);
      w.info(`${NIXL}/base_worker.py:320`, `Detected kv cache layout ${g.kvCacheLayout}`);
    }
  }

  /** What each TP worker logs when it registers its KV caches with NIXL (base_worker.py `register_kv_caches`). */
  logRegistration(): void {
    const device = this.o.config.kvBufferDevice;
    for (const w of this.o.logs.workers) {
      w.info(
        `${NIXL}/base_worker.py:702`,
        `Registering KV_Caches. use_mla: ${pyBool(this.o.geometry.useMla)}, kv_buffer_device: ${device}, use_host_buffer: ${pyBool(device === "cpu")}`,
      );
    }
    this.o.logs.core.debug(`${NIXL}/base_scheduler.py:171`, `NIXL compatibility hash: ${this.compatHash}`);
  }

  close(): void {
    this.server?.close();
    for (const h of this.held.values()) if (h.timer) clearTimeout(h.timer);
  }

  // ---- producer -------------------------------------------------------------------------------------

  /** Keeps a finished prefill's blocks for a remote decode and returns the handoff. */
  hold(requestId: string, blocks: number[], numTokens: number): KvTransferParams {
    const expiresAt = Date.now() + this.leaseMs;
    const timer = setTimeout(() => this.expire(requestId), this.leaseMs);
    timer.unref();
    this.held.set(requestId, { blocks, numTokens, expiresAt, timer });
    return {
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_block_ids: [blocks],
      remote_engine_id: this.engineId,
      remote_request_id: requestId,
      remote_host: this.o.sideChannelHost,
      remote_port: this.o.sideChannelPort,
      tp_size: this.o.geometry.tensorParallelSize,
      remote_num_tokens: numTokens,
      remote_blocks_expiry_time: expiresAt / 1000,
    };
  }

  private forget(requestId: string, why: "expired" | "transferred"): void {
    const h = this.held.get(requestId);
    if (!h) return;
    if (h.timer) clearTimeout(h.timer);
    this.held.delete(requestId);
    this.o.releaseBlocks(h.blocks);
    this.gone.set(requestId, why);
    if (this.gone.size > TOMBSTONES) this.gone.delete(this.gone.keys().next().value as string);
  }

  private expire(requestId: string): void {
    this.o.logs.core.warn(
      `${NIXL}/base_scheduler.py:611`,
      `Releasing expired KV blocks for request ${requestId} which were retrieved by 0 decode worker(s) within ${this.o.config.kvLeaseDurationS} seconds.`,
    );
    this.forget(requestId, "expired");
  }

  private async handle(msg: Message): Promise<HandlerResult> {
    if (msg.type === "get_meta") {
      return { reply: { ok: true, compatibility_hash: this.compatHash, agent_metadata: this.metadata() } };
    }
    if (msg.type !== "read") return { reply: { ok: false, error: `unknown side-channel message type ${String(msg.type)}` } };
    const requestId = String(msg.remote_request_id);
    if (msg.expected_engine_id !== this.engineId) {
      return { reply: { ok: false, error: `this NIXL agent is engine ${this.engineId}, not ${String(msg.expected_engine_id)}` } };
    }
    const h = this.held.get(requestId);
    if (!h) {
      const why = this.gone.get(requestId);
      const error =
        why === "expired"
          ? `KV blocks of request ${requestId} expired: the lease of ${this.o.config.kvLeaseDurationS} s ran out before the decode read them`
          : why === "transferred"
            ? `KV blocks of request ${requestId} were already read and freed`
            : `no KV blocks are held for request ${requestId} (unknown request)`;
      return { reply: { ok: false, error } };
    }
    const wanted = flatten(msg.block_ids);
    if (wanted === null || (wanted.length > 0 && (wanted.length !== h.blocks.length || wanted.some((b, i) => b !== h.blocks[i])))) {
      return { reply: { ok: false, error: `block ids ${JSON.stringify(msg.block_ids)} do not match the ${h.blocks.length} block(s) held for request ${requestId}` } };
    }
    // Pin the blocks: the lease must not free them while their bytes are on the wire.
    if (h.timer) clearTimeout(h.timer);
    h.timer = null;
    const g = this.o.geometry;
    const bytes = wanted.length * g.pageSizeBytes * g.kvLayers * g.tensorParallelSize;
    const wireBytes = Math.min(MAX_PAYLOAD_BYTES, Math.round(bytes * this.o.timeScale));
    return {
      reply: { ok: true, num_blocks: wanted.length, bytes },
      payloadBytes: wireBytes,
      afterPayload: () => this.forget(requestId, "transferred"),
    };
  }

  // ---- consumer -------------------------------------------------------------------------------------

  /** Pulls the KV a peer holds for `params`; throws KvLoadError with vLLM's wording on any failure. */
  async pull(params: Record<string, unknown>): Promise<TransferStats> {
    const engineId = params.remote_engine_id;
    const host = params.remote_host;
    const port = params.remote_port;
    const requestId = params.remote_request_id;
    const blockIds = flatten(params.remote_block_ids);
    const remoteTp = typeof params.tp_size === "number" ? params.tp_size : 1;
    if (typeof engineId !== "string" || !engineId || typeof host !== "string" || typeof port !== "number" || blockIds === null) {
      throw new KvLoadError("invalid_params", `kv_transfer_params is not a complete handoff: ${JSON.stringify(params)}`);
    }
    const path = `tcp://${host}:${port}`;
    const key = `${host}:${port}`;
    const cached = this.peers.get(key);
    if (cached && cached.engine_id !== engineId) {
      throw new KvLoadError(
        "handshake_failed",
        `AssertionError: stale NIXL handshake for ${path}: metadata cached for engine ${cached.engine_id}, ` +
          `but the handoff names engine ${engineId} (the remote engine restarted; restart this engine to clear it, vLLM #38840)`,
      );
    }
    const started = now();
    let client: SideChannelClient;
    try {
      client = await SideChannelClient.connect(host, port, HANDSHAKE_TIMEOUT_MS);
    } catch (err) {
      throw new KvLoadError("handshake_failed", `could not reach the NIXL side channel at ${path}: ${(err as Error).message}`);
    }
    try {
      if (!cached) this.peers.set(key, await this.handshake(client, path, engineId, remoteTp));
      const { reply, payloadBytes } = await client
        .request({ type: "read", expected_engine_id: engineId, remote_request_id: requestId, block_ids: blockIds, consumer_engine_id: this.engineId }, HANDSHAKE_TIMEOUT_MS)
        .catch((err: Error) => {
          throw new KvLoadError("transfer_failed", `reading KV blocks from ${path} failed: ${err.message}`);
        });
      if (reply.ok !== true) throw new KvLoadError("transfer_failed", String(reply.error));
      return {
        seconds: (now() - started) / 1000,
        bytes: typeof reply.bytes === "number" ? reply.bytes : 0,
        wireBytes: payloadBytes,
        numBlocks: blockIds.length,
      };
    } finally {
      client.close();
    }
  }

  private async handshake(client: SideChannelClient, path: string, engineId: string, remoteTp: number): Promise<AgentMetadata> {
    const { reply } = await client.request({ type: "get_meta", engine_id: this.engineId, compatibility_hash: this.compatHash }, HANDSHAKE_TIMEOUT_MS).catch((err: Error) => {
      throw new KvLoadError("handshake_failed", `NIXL handshake with ${path} failed: ${err.message}`);
    });
    const remoteHash = String(reply.compatibility_hash);
    if (this.o.config.enforceHandshakeCompat && remoteHash !== this.compatHash) {
      throw new KvLoadError(
        "handshake_failed",
        `RuntimeError: NIXL compatibility hash mismatch. Local: ${this.compatHash}, Remote: ${remoteHash}. ` +
          "Prefill and decode instances have incompatible configurations. This may be due to: different vLLM versions, " +
          "models, dtypes, KV cache layouts, attention backends, etc. Both instances must use identical configurations." +
          `Disable this check using --kv-transfer-config '{"kv_connector_extra_config": {"enforce_handshake_compat": false}}'`,
      );
    }
    for (const w of this.o.logs.workers) w.info(`${NIXL}/base_worker.py:947`, `NIXL compatibility check passed (hash: ${remoteHash})`);
    const meta = reply.agent_metadata as AgentMetadata;
    if (meta.engine_id !== engineId) {
      throw new KvLoadError("handshake_failed", `RuntimeError: Remote NIXL agent engine ID mismatch. Expected ${engineId},received ${meta.engine_id}.`);
    }
    const problem = this.validateRemote(meta, remoteTp);
    if (problem) throw new KvLoadError("handshake_failed", problem);
    const localTp = this.o.geometry.tensorParallelSize;
    const tpRatio = localTp >= remoteTp ? localTp / remoteTp : -(remoteTp / localTp);
    this.o.logs.workers.forEach((w, rank) =>
      w.info(
        `${NIXL}/base_worker.py:1104`,
        `Transfer plan: TransferTopology(tp_ratio=${tpRatio}, num_kv_heads=${this.o.geometry.numKvHeads}, local_tp=${localTp}, remote_tp=${remoteTp}, ` +
          `remote_pp=1, local_dcp=1, remote_dcp=1, local_rank=${rank}, remote_block_len=${meta.block_lens[0]})`,
      ),
    );
    return meta;
  }

  /** _validate_remote_agent_handshake: TP ratio, layout, block size and page geometry; null when fine. */
  validateRemote(meta: AgentMetadata, remoteTp: number): string | null {
    const g = this.o.geometry;
    const localTp = g.tensorParallelSize;
    if (meta.tp_size !== remoteTp) return `AssertionError: remote tp_size ${meta.tp_size} (handshake) != ${remoteTp} (kv_transfer_params)`;
    let tpRatio: number;
    if (localTp >= remoteTp) {
      if (localTp % remoteTp !== 0) return `AssertionError: Local tensor parallel size ${localTp} is not divisible by remote tensor parallel size ${remoteTp}.`;
      tpRatio = localTp / remoteTp;
    } else {
      if (remoteTp % localTp !== 0) return `AssertionError: Remote tensor parallel size ${remoteTp} is not divisible by local tensor parallel size ${localTp}.`;
      tpRatio = -(remoteTp / localTp);
    }
    const replicated = meta.use_mla || remoteTp > meta.num_kv_heads;
    if (tpRatio < 0 && remoteTp > meta.num_kv_heads && !meta.use_mla) {
      return `AssertionError: P TP (${remoteTp}) > D TP (${localTp}) is not supported when KV heads are replicated (num_kv_heads=${meta.num_kv_heads}).`;
    }
    if (!g.useMla && meta.kv_cache_layout !== g.kvCacheLayout && !(this.o.config.enablePermuteLocalKv && meta.kv_cache_layout === "LBHNC")) {
      return (
        "RuntimeError: Heterogeneous TP expects same kv_cache_layout. Or enable experimental feature to use HND to NHD " +
        "support by setting 'enable_permute_local_kv'=True in --kv-transfer-config."
      );
    }
    if (meta.block_size > g.blockSize || g.blockSize % meta.block_size !== 0) {
      return `AssertionError: remote block_size (${meta.block_size}) must divide the local block_size (${g.blockSize}); heterogeneous block sizes are supported only when P's is smaller.`;
    }
    const blockSizeRatio = g.blockSize / meta.block_size;
    if (blockSizeRatio > 1 && tpRatio < 0) return "AssertionError: Different local/remote block sizes are not supported when P TP > D TP.";
    const remoteLen = meta.block_lens[0];
    const localLen = g.pageSizeBytes;
    if (replicated) {
      if (localLen / blockSizeRatio !== remoteLen) return "AssertionError: KV cache sizes must match between P and D when replicated";
    } else if (tpRatio > 0) {
      if (remoteLen !== (localLen * tpRatio) / blockSizeRatio) {
        return "AssertionError: Remote P worker KV layer cache must be of shape [2, N, local_kv_heads*tp_ratio, page_size, head_dim] and same dtype.";
      }
    } else if (remoteLen !== localLen / -tpRatio) {
      return "AssertionError: Remote P worker KV layer cache must be of shape [2, N, local_kv_heads/tp_ratio, page_size, head_dim] and same dtype.";
    }
    if (meta.kv_caches_base_addr.length !== g.kvLayers) {
      return `AssertionError: assert len(nixl_agent_meta.kv_caches_base_addr) == len(self.block_len_per_layer) (${meta.kv_caches_base_addr.length} != ${g.kvLayers})`;
    }
    return null;
  }

  /** Logs a failed load the way vLLM's _log_failure does. */
  logFailure(err: KvLoadError, requestId: string, params: Record<string, unknown>): void {
    const context = {
      failure_type: err.failureType,
      request_id: requestId,
      engine_id: this.engineId,
      remote_engine_id: params.remote_engine_id,
      remote_request_id: params.remote_request_id,
      remote_host: params.remote_host,
      remote_port: params.remote_port,
    };
    this.o.logs.workers[0].error(`${NIXL}/base_worker.py:1532`, `NIXL transfer failure: ${err.failureType}. ${err.message} | Context: ${JSON.stringify(context)}`);
  }
}
