/**
 * The NixlConnector, both halves, as vLLM 0.29.0 runs it (../shared/reference/vllm-restart-facts.md §1):
 *
 * - producer (P, the prefill leg): after a request with `do_remote_decode` finishes, its KV blocks stay
 *   allocated under a lease (kv_lease_duration, scaled by the time scale) and the response carries the
 *   handoff (`kv_transfer_params`). P answers the side channel: its handshake metadata, and reads of the
 *   held blocks (streaming their bytes, then freeing them).
 * - consumer (D, the decode leg): for `do_remote_prefill`, D reads the blocks from the remote engine the
 *   handoff names, handshaking first when it holds no state for that remote_engine_id (compatibility hash,
 *   engine id, TP/layout/page checks as in vLLM's _validate_remote_agent_handshake), and only then decodes.
 *
 * D's per-peer state is keyed by the remote engine_id, never by host:port (§1.2), so what a restart leaves
 * behind depends on the restarted engine's id (§1.5):
 * - a new id (the default, a uuid per process start): the next handoff naming it handshakes again with
 *   remote_host:remote_port and works; the old id's entry stays behind until engine_ttl eviction or
 *   shutdown. A handoff the old process prefilled fails: with the old id known, its read reaches a process
 *   that is not that agent (transfer_failed); unknown, its handshake meets the new process and raises
 *   "Remote NIXL agent engine ID mismatch" (case C).
 * - a pinned id: D never handshakes again and every read goes to the dead agent (case B).
 * And below vLLM, in NIXL (nixl-runtime.ts, vLLM #49238): an endpoint to a gone peer fails after the UCX
 * endpoint timeout, and the next handshake's loadRemoteMD then segfaults a D worker, taking the engine down,
 * unless the declared NIXL has the fix (NIXL_ERR_REMOTE_DISCONNECT instead). README.md has the exact rules.
 */
import { randomUUID } from "node:crypto";
import type { Server } from "node:net";
import type { CacheGeometry } from "./geometry";
import type { KVTransferConfig } from "./kv-transfer-config";
import { now } from "./latency";
import type { ProcessLog } from "./log";
import { compatibilityHash, type Factor } from "./nixl-compat";
import { hasRkeyUnpackFix, type NixlDistribution, UCX_ENDPOINT_TIMEOUT_S } from "./nixl-runtime";
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
  /** The NIXL agent's name: a uuid per process (vLLM's NixlWrapper(str(uuid.uuid4()))), inside agent_metadata in vLLM. */
  agent_name: string;
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
  hashFactors: Record<string, Factor>;
  sideChannelHost: string;
  sideChannelPort: number;
  timeScale: number;
  /** Simulated seconds before an endpoint to a gone peer fails (the host's sim config; UCX's own by default). */
  endpointTimeoutS?: number;
  /** Gives held blocks back to the scheduler's pool. */
  releaseBlocks: (blocks: readonly number[]) => void;
  /** Where vLLM's connector halves log: the scheduler in the engine core, a worker per TP rank. */
  logs: { core: ProcessLog; workers: ReadonlyArray<ProcessLog> };
  /** The NIXL distribution the image declares (nixl-runtime.ts); its version decides #49238's crash. */
  nixl: NixlDistribution;
  /**
   * A worker died natively (the segfault of #49238): the connector has written what the worker prints; this
   * must take the whole engine down, as vLLM's executor does when a worker process dies.
   */
  onWorkerCrash: (rank: number) => void;
}

/**
 * One remote engine as D holds it (base_worker.py: _remote_agents, dst_xfer_side_handles,
 * kv_caches_base_addr, _engine_last_active, all keyed by engine_id).
 */
interface RemoteEngine {
  engineId: string;
  meta: AgentMetadata;
  host: string;
  port: number;
  /** now() of the last read issued to it, failed ones included (_engine_last_active), or of the handshake. */
  lastActive: number;
  /** The UCX endpoint to its agent, modelled as a side-channel connection held open from the handshake on. */
  endpoint: SideChannelClient;
  /** now() when that connection closed (the peer's process is gone), null while it lives. */
  goneAt: number | null;
  /** A failed endpoint NIXL has torn down (after NIXL_ERR_REMOTE_DISCONNECT): it can race no loadRemoteMD again. */
  torn: boolean;
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
  /** This process's NIXL agent: a new name at every start, whatever the engine_id. */
  readonly agentName = randomUUID();
  /** Remote engines by engine_id (vLLM 0.29.0 keys nothing by host:port). */
  private readonly remotes = new Map<string, RemoteEngine>();
  /** One handshake in flight per remote engine_id (_handshake_futures). */
  private readonly handshakes = new Map<string, Promise<RemoteEngine>>();
  /** Simulated seconds before an endpoint to a gone peer fails; the sim config or the control port may shorten it. */
  private endpointTimeoutS: number;
  /** The NIXL version whose crash rule applies: the image's, unless the control port overrides it. */
  private nixlVersion: string;
  private nixlFixed: boolean;
  private server: Server | null = null;

  constructor(private readonly o: NixlOptions) {
    this.engineId = o.config.engineId;
    this.compatHash = compatibilityHash(o.hashFactors);
    this.endpointTimeoutS = o.endpointTimeoutS ?? UCX_ENDPOINT_TIMEOUT_S;
    this.nixlVersion = o.nixl.version;
    this.nixlFixed = hasRkeyUnpackFix(o.nixl.version);
  }

  /**
   * What the control port shows and sets (never a vLLM route): the endpoint timeout in simulated seconds,
   * and the NIXL version the crash rule follows, so a test can play a fixed release against the image's.
   */
  tunables(set: { endpointTimeoutS?: number; nixlVersion?: string } = {}): Record<string, unknown> {
    if (set.endpointTimeoutS !== undefined) {
      if (!(set.endpointTimeoutS >= 0)) throw new Error("endpoint_timeout_s must be a number >= 0");
      this.endpointTimeoutS = set.endpointTimeoutS;
    }
    if (set.nixlVersion !== undefined) {
      this.nixlFixed = hasRkeyUnpackFix(set.nixlVersion);
      this.nixlVersion = set.nixlVersion;
    }
    return {
      distribution: this.o.nixl.name,
      declared_version: this.o.nixl.version,
      declared_in: this.o.nixl.source,
      version: this.nixlVersion,
      rkey_unpack_fix: this.nixlFixed,
      endpoint_timeout_s: this.endpointTimeoutS,
      engine_ttl_s: this.o.config.engineTtlS,
      agent_name: this.agentName,
      remote_engines: [...this.remotes.values()].map((r) => ({
        engine_id: r.engineId,
        agent_name: r.meta.agent_name,
        host: r.host,
        port: r.port,
        endpoint: r.goneAt === null ? "connected" : r.torn ? "torn down" : this.endpointFailed(r) ? "failed" : "peer gone",
      })),
    };
  }

  private get endpointTimeoutMs(): number {
    return this.endpointTimeoutS * this.o.timeScale * 1000;
  }

  private endpointFailed(r: RemoteEngine): boolean {
    return !r.torn && r.goneAt !== null && now() - r.goneAt >= this.endpointTimeoutMs;
  }

  get sideChannel(): { host: string; port: number } {
    return { host: this.o.sideChannelHost, port: this.o.sideChannelPort };
  }

  get hashFactors(): Record<string, Factor> {
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
      agent_name: this.agentName,
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

  /** Shutdown: _cleanup_remote_engine for every peer (its endpoint closed), the side channel closed. */
  close(): void {
    this.server?.close();
    for (const h of this.held.values()) if (h.timer) clearTimeout(h.timer);
    for (const r of this.remotes.values()) r.endpoint.close();
    this.remotes.clear();
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
    if (msg.expected_agent !== this.agentName || msg.expected_engine_id !== this.engineId) {
      // The reader's descriptors name an agent of a process that is gone (a restart at this address).
      return {
        reply: {
          ok: false,
          error:
            `NIXL read of request ${requestId} failed: remote agent ${String(msg.expected_agent)} of engine ${String(msg.expected_engine_id)} ` +
            `is gone (the process at this address now runs agent ${this.agentName} of engine ${this.engineId})`,
        },
      };
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
    const started = now();
    // pull_worker.start_load_kv: a handshake only for a remote_engine_id this engine holds nothing for.
    const remote = this.remotes.get(engineId) ?? (await this.ensureHandshake(engineId, host, port, remoteTp));
    // _read_blocks_for_req stamps the engine active when the read is issued, whether or not it succeeds.
    remote.lastActive = now();
    // The read goes to the agent the handshake found, wherever the handoff now points.
    const path = `tcp://${remote.host}:${remote.port}`;
    let client: SideChannelClient;
    try {
      client = await SideChannelClient.connect(remote.host, remote.port, HANDSHAKE_TIMEOUT_MS);
    } catch (err) {
      throw new KvLoadError("transfer_failed", `NIXL read from remote agent ${remote.meta.agent_name} (engine ${engineId}) at ${path} failed: ${(err as Error).message}`);
    }
    try {
      const { reply, payloadBytes } = await client
        .request(
          { type: "read", expected_engine_id: engineId, expected_agent: remote.meta.agent_name, remote_request_id: requestId, block_ids: blockIds, consumer_engine_id: this.engineId },
          HANDSHAKE_TIMEOUT_MS,
        )
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

  /** _ensure_handshake: evict stale engines, then join or start the one handshake in flight for engineId. */
  private ensureHandshake(engineId: string, host: string, port: number, remoteTp: number): Promise<RemoteEngine> {
    this.evictStaleEngines();
    const known = this.remotes.get(engineId);
    if (known) return Promise.resolve(known);
    let pending = this.handshakes.get(engineId);
    if (!pending) {
      pending = this.handshake(engineId, host, port, remoteTp).finally(() => this.handshakes.delete(engineId));
      this.handshakes.set(engineId, pending);
    }
    return pending;
  }

  /** _evict_stale_engines: drops engines unread for longer than engine_ttl (runs only on a new handshake). */
  private evictStaleEngines(): void {
    const ttl = this.o.config.engineTtlS;
    if (ttl <= 0) return;
    for (const r of [...this.remotes.values()]) {
      const idleS = (now() - r.lastActive) / 1000 / this.o.timeScale;
      if (idleS <= ttl) continue;
      // _cleanup_remote_engine: remove_remote_agent closes the endpoint, failed or not.
      r.endpoint.close();
      this.remotes.delete(r.engineId);
      for (const w of this.o.logs.workers) w.info(`${NIXL}/base_worker.py:1671`, `Evicted stale remote engine ${r.engineId} (inactive for ${idleS.toFixed(1)}s).`);
    }
  }

  /** _nixl_handshake, then add_remote_agent: one remote engine fetched, checked, loaded and kept. */
  private async handshake(engineId: string, host: string, port: number, remoteTp: number): Promise<RemoteEngine> {
    const path = `tcp://${host}:${port}`;
    let client: SideChannelClient;
    try {
      client = await SideChannelClient.connect(host, port, HANDSHAKE_TIMEOUT_MS);
    } catch (err) {
      throw new KvLoadError("handshake_failed", `could not reach the NIXL side channel at ${path}: ${(err as Error).message}`);
    }
    try {
      const meta = await this.fetchMetadata(client, path, engineId);
      this.loadRemoteMetadata(meta);
      const problem = this.validateRemote(meta, remoteTp);
      if (problem) throw new KvLoadError("handshake_failed", problem);
      this.logTransferPlan(meta, remoteTp);
      const remote: RemoteEngine = { engineId, meta, host, port, lastActive: now(), endpoint: client, goneAt: null, torn: false };
      client.onClose(() => (remote.goneAt ??= now()));
      this.remotes.set(engineId, remote);
      return remote;
    } catch (err) {
      client.close();
      throw err;
    }
  }

  /** GET_META_MSG, the compatibility hash and the engine id check of _nixl_handshake. */
  private async fetchMetadata(client: SideChannelClient, path: string, engineId: string): Promise<AgentMetadata> {
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
    // A handoff prefilled by a process that has since restarted with a new id reaches the new process (case C).
    if (meta.engine_id !== engineId) {
      throw new KvLoadError("handshake_failed", `RuntimeError: Remote NIXL agent engine ID mismatch. Expected ${engineId},received ${meta.engine_id}.`);
    }
    return meta;
  }

  /**
   * nixlAgent::loadRemoteMD for a new remote agent (vLLM #49238). While this engine holds an endpoint that
   * has failed (its peer's process gone for the endpoint timeout) and that is still loaded (not evicted),
   * NIXL without PR #1987 segfaults one worker inside ucp_ep_rkey_unpack, which takes the engine down; with
   * it, the call returns NIXL_ERR_REMOTE_DISCONNECT and this handshake fails, the failed endpoint being
   * closed by then, so the next handshake goes through.
   */
  private loadRemoteMetadata(meta: AgentMetadata): void {
    const failed = [...this.remotes.values()].filter((r) => this.endpointFailed(r));
    if (failed.length === 0) return;
    if (!this.nixlFixed) {
      this.crash(0, meta, failed[0]);
      return;
    }
    for (const r of failed) r.torn = true;
    throw new KvLoadError(
      "handshake_failed",
      `nixl._bindings.nixlRemoteDisconnectError: NIXL_ERR_REMOTE_DISCONNECT (loadRemoteMD of agent ${meta.agent_name} of engine ${meta.engine_id}: ` +
        `the UCX endpoint to agent ${failed[0].meta.agent_name} of engine ${failed[0].engineId} has failed)`,
    );
  }

  /** What a worker prints when UCX's signal handler catches the segfault, before the engine goes down. */
  private crash(rank: number, meta: AgentMetadata, failed: RemoteEngine): void {
    const w = this.o.logs.workers[rank];
    w.write(
      [
        `Caught signal 11 (Segmentation fault: address not mapped to object) in ucp_ep_rkey_unpack during nixlAgent::loadRemoteMD ` +
          `of agent ${meta.agent_name} (engine ${meta.engine_id}); the UCX endpoint to agent ${failed.meta.agent_name} (engine ${failed.engineId}) ` +
          `had failed (Endpoint timeout). ${this.o.nixl.name} ${this.nixlVersion} lacks ai-dynamo/nixl PR #1987 (vLLM #49238).`,
        "==== backtrace ====",
        " 0  libucp.so.0: ucp_ep_rkey_unpack()",
        " 1  libplugin_UCX.so: nixl::ucx::rkey::unpackUcpRkey()",
        " 2  libplugin_UCX.so: nixlUcxEngine::internalMDHelper()",
        " 3  libnixl.so: nixlAgent::loadRemoteMD()",
        "=================",
        "Fatal Python error: Segmentation fault",
      ].join("\n"),
      process.stderr,
    );
    this.o.onWorkerCrash(rank);
    // The engine is going down: nothing after a segfault runs, so no answer reaches this request.
    throw new KvLoadError("worker_died", `Worker_TP${rank} died in nixlAgent::loadRemoteMD (segmentation fault)`);
  }

  /** add_remote_agent's `Transfer plan:` line, once per rank at the first handshake with a remote engine. */
  private logTransferPlan(meta: AgentMetadata, remoteTp: number): void {
    const localTp = this.o.geometry.tensorParallelSize;
    const tpRatio = localTp >= remoteTp ? localTp / remoteTp : -(remoteTp / localTp);
    this.o.logs.workers.forEach((w, rank) =>
      w.info(
        `${NIXL}/base_worker.py:1104`,
        `Transfer plan: TransferTopology(tp_ratio=${tpRatio}, num_kv_heads=${this.o.geometry.numKvHeads}, local_tp=${localTp}, remote_tp=${remoteTp}, ` +
          `remote_pp=1, local_dcp=1, remote_dcp=1, local_rank=${rank}, remote_block_len=${meta.block_lens[0]})`,
      ),
    );
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
