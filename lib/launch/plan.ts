import type { EngineSpec, FleetSpec } from "../config/types";
import { sha256Json } from "../digest";

/**
 * Everything one engine's serving command is derived from; all plain values, no secrets. Resolved by
 * `resolveEngineLaunch` (./policy.ts), the one place an engine's GPU ids and TP size get their defaults.
 */
export interface LaunchInputs {
  readonly engine: {
    readonly id: string;
    readonly port: number;
    readonly nixlPort: number;
    /** The host GPU indices this engine uses, resolved: the ones it names, or every GPU its host shows. */
    readonly gpuIds: ReadonlyArray<number>;
    /** Whether the config named them (`engines[].gpuIds`) rather than leaving the engine every GPU of its host. */
    readonly gpuIdsNamed: boolean;
  };
  readonly host: {
    readonly alias: string;
    readonly fabricInterface: string;
    readonly fabricAddress: string;
    readonly vendor: "nvidia" | "amd" | "none";
    /** AMD: the render node of each of the engine's GPUs, in `engine.gpuIds` order, as discovery read them from /sys/class/drm. */
    readonly renderNodes?: ReadonlyArray<string>;
  };
  readonly model: {
    readonly servedName: string;
    readonly checkpointDir: string;
    /** torch_dtype from the checkpoint's config.json, when discovery has read it. */
    readonly dtype?: string;
    readonly maxPositionEmbeddings?: number;
    /** `auto_map` in the checkpoint: vLLM refuses to load it without `--trust-remote-code`. */
    readonly trustRemoteCode?: boolean;
    /** Convolutional SSM transfer state: vLLM 0.29 defaults to SD, so DS must be explicit. */
    readonly ssmConvStateLayoutDS?: boolean;
    /** A tokenizer other than the checkpoint's own (`--tokenizer`). */
    readonly tokenizer?: string;
  };
  readonly policy: {
    readonly vllmCommand: string;
    readonly transport: "tcp" | "ucx_rdma";
    readonly dtype: string;
    readonly kvCacheDtype: string;
    readonly blockSize: number;
    readonly enforceEager: boolean;
    readonly maxModelLen: number;
    readonly maxNumSeqs: number;
    readonly gpuMemoryUtilization: number;
    /** Resolved: the one configured, or one rank per GPU of `engine.gpuIds`. */
    readonly tensorParallelSize: number;
    readonly prefixCaching: boolean;
    readonly ucxTcpPortRange: string;
    readonly kvLeaseDurationS: number;
    readonly rdmaHcas?: ReadonlyArray<string>;
    /** `rdma.gidIndex`: the RoCE GID UCX uses (`UCX_IB_GID_INDEX`), the one Gate D measured; UCX picks one itself when absent. */
    readonly rdmaGidIndex?: number;
    /** RDMA device nodes a container is given (transport `ucx_rdma`). */
    readonly rdmaDevices?: ReadonlyArray<string>;
    readonly engineArgs?: ReadonlyArray<string>;
    readonly engineEnv?: Readonly<Record<string, string>>;
  };
}

/** The variable that tells the runtime which GPUs it may use, by vendor (vLLM reads one, not both). */
export type VisibilityVariable = "CUDA_VISIBLE_DEVICES" | "HIP_VISIBLE_DEVICES";

/**
 * Where an engine runs, resolved once with its command: every runtime and the GPU claims read these
 * values, never the plan's env text. Not part of `launch.json` or the plan hash (see `launchRecord`).
 */
export interface LaunchPlacement {
  /** Host GPU indices the engine uses, resolved once (lib/launch/policy.ts): the visibility variable's list. */
  readonly gpuIds: ReadonlyArray<number>;
  /**
   * Whether the config named the ids; false when the engine takes every GPU its host shows. The runbook's
   * `deployment.env` names an engine's GPUs only then (lib/fleet/generated-config.ts).
   */
  readonly gpuIdsNamed: boolean;
  readonly vendor: "nvidia" | "amd" | "none";
  readonly visibilityVariable: VisibilityVariable;
  readonly transport: "tcp" | "ucx_rdma";
  /** RDMA device nodes a container is given; empty on TCP. */
  readonly rdmaDevices: ReadonlyArray<string>;
  /** AMD: the render node of each GPU, in `gpuIds` order (read from the host, never assumed); empty otherwise. */
  readonly renderNodes: ReadonlyArray<string>;
}

/** The serving command for one engine exactly as `launch.json` records it (the runbook's fields). */
export interface LaunchRecord {
  readonly engineId: string;
  readonly argv: ReadonlyArray<string>;
  /** Environment without secrets; the API key travels separately in a 0600 env file. */
  readonly env: Readonly<Record<string, string>>;
  readonly url: string;
  readonly tensorParallelSize: number;
  readonly maxModelLen: number;
  /** sha256 over argv and env: what every later measurement of this engine records. */
  readonly planSha256: string;
}

/** The complete launch of one engine: its recorded command, where it runs, and what its runtime must support. */
export interface LaunchPlan extends LaunchRecord {
  readonly placement: LaunchPlacement;
  /** The checkpoint's convolutional SSM state needs the DS layout: the image check requires the runtime to offer it. */
  readonly dsRequired: boolean;
}

/** The plan without its placement: what `launch.json`, resource inputs and evidence hold, field for field. */
export function launchRecord(plan: LaunchRecord): LaunchRecord {
  const { engineId, argv, env, url, tensorParallelSize, maxModelLen, planSha256 } = plan;
  return { engineId, argv, env, url, tensorParallelSize, maxModelLen, planSha256 };
}

/**
 * An engine's KV transport, and its RDMA settings when that transport is `ucx_rdma`: the engine's
 * override, else the fleet's. Discovery (which device nodes to look for) and the fabric mesh read it
 * before any plan exists; the plan carries the result as `placement.transport`.
 */
export function engineTransport(spec: Pick<FleetSpec, "launch">, engine: Pick<EngineSpec, "overrides">): { transport: LaunchPlacement["transport"]; rdma?: FleetSpec["launch"]["rdma"] } {
  const transport = engine.overrides?.transport ?? spec.launch.transport;
  return transport === "ucx_rdma" ? { transport, rdma: engine.overrides?.rdma ?? spec.launch.rdma } : { transport };
}

export function visibilityVariableOf(vendor: LaunchPlacement["vendor"]): VisibilityVariable {
  return vendor === "amd" ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES";
}

/** Runbook: model dtype from the checkpoint configuration, or bfloat16 when it is unspecified. */
function resolveDtype(policyDtype: string, modelDtype?: string): string {
  if (policyDtype !== "model") return policyDtype;
  return modelDtype && modelDtype !== "auto" ? modelDtype : "bfloat16";
}

/**
 * The launch plan of resolved inputs: nothing here defaults or checks an engine's GPUs or TP size
 * (./policy.ts did). Callers outside tests reach it through `engineLaunchPlan`, so the up and the
 * preview render every plan one way.
 */
export function renderLaunchPlan(inputs: LaunchInputs): LaunchPlan {
  const { engine, host, model, policy } = inputs;
  const gpus = [...engine.gpuIds];
  const tp = policy.tensorParallelSize;
  const maxModelLen = Math.min(policy.maxModelLen, model.maxPositionEmbeddings ?? Infinity);

  const kvTransferConfig = {
    kv_connector: "NixlConnector",
    kv_role: "kv_both",
    kv_load_failure_policy: "fail",
    kv_connector_extra_config: {
      backends: ["UCX"],
      enforce_handshake_compat: true,
      kv_lease_duration: policy.kvLeaseDurationS,
    },
  };
  const defaults = [
    "--tensor-parallel-size", String(tp),
    "--dtype", resolveDtype(policy.dtype, model.dtype),
    "--kv-cache-dtype", policy.kvCacheDtype,
    "--block-size", String(policy.blockSize),
    "--max-model-len", String(maxModelLen),
    "--max-num-seqs", String(policy.maxNumSeqs),
    "--gpu-memory-utilization", String(policy.gpuMemoryUtilization),
    ...(policy.enforceEager ? ["--enforce-eager"] : []),
    policy.prefixCaching ? "--enable-prefix-caching" : "--no-enable-prefix-caching",
  ];
  const chosen = policy.engineArgs ?? defaults;
  // Model requirements are appended even when engineArgs replaces the defaults (runbook, Gate A).
  const required = [
    ...(model.trustRemoteCode && !chosen.includes("--trust-remote-code") ? ["--trust-remote-code"] : []),
    ...(model.tokenizer ? ["--tokenizer", model.tokenizer] : []),
  ];
  const argv = [
    policy.vllmCommand, "serve", model.checkpointDir,
    "--served-model-name", model.servedName,
    "--host", host.fabricAddress,
    "--port", String(engine.port),
    ...chosen,
    ...required,
    "--kv-transfer-config", JSON.stringify(kvTransferConfig),
  ];

  const accelerator = host.vendor === "amd" ? "rocm" : "cuda_copy";
  const transportTls = policy.transport === "ucx_rdma" ? "rc" : "tcp";
  const visibility = visibilityVariableOf(host.vendor);
  const env: Record<string, string> = {
    ...(policy.engineEnv ?? {}),
    VLLM_NIXL_SIDE_CHANNEL_HOST: host.fabricAddress,
    VLLM_NIXL_SIDE_CHANNEL_PORT: String(engine.nixlPort),
    UCX_TLS: `${transportTls},sm,self,${accelerator}`,
    UCX_NET_DEVICES: policy.transport === "ucx_rdma" ? (policy.rdmaHcas ?? []).join(",") : host.fabricInterface,
    UCX_TCP_PORT_RANGE: policy.ucxTcpPortRange,
    ...(policy.transport === "ucx_rdma" && policy.rdmaGidIndex !== undefined ? { UCX_IB_GID_INDEX: String(policy.rdmaGidIndex) } : {}),
    [visibility]: gpus.join(","),
    ...(model.ssmConvStateLayoutDS ? { VLLM_SSM_CONV_STATE_LAYOUT: "DS" } : {}),
  };

  const url = `http://${host.fabricAddress.includes(":") ? `[${host.fabricAddress}]` : host.fabricAddress}:${engine.port}`;
  const placement: LaunchPlacement = {
    gpuIds: gpus,
    gpuIdsNamed: engine.gpuIdsNamed,
    vendor: host.vendor,
    visibilityVariable: visibility,
    transport: policy.transport,
    rdmaDevices: policy.transport === "ucx_rdma" ? [...(policy.rdmaDevices ?? [])] : [],
    renderNodes: host.vendor === "amd" ? [...(host.renderNodes ?? [])] : [],
  };
  return { engineId: engine.id, argv, env, url, tensorParallelSize: tp, maxModelLen, planSha256: sha256Json({ argv, env }), placement, dsRequired: model.ssmConvStateLayoutDS === true };
}

/** vLLM's own defaults for the serving flags a plan may leave out (engineArgs can replace ours). */
const VLLM_DEFAULTS = { "--block-size": "16", "--dtype": "auto", "--kv-cache-dtype": "auto" } as const;

/** The cache settings a live engine must show, read from the plan's own argv. */
export function cacheExpectations(plan: LaunchRecord): { blockSize: number; tensorParallelSize: number; dtype: string; kvCacheDtype: string } {
  const flag = (name: keyof typeof VLLM_DEFAULTS): string => {
    const i = plan.argv.lastIndexOf(name);
    return i >= 0 && plan.argv[i + 1] !== undefined ? plan.argv[i + 1] : VLLM_DEFAULTS[name];
  };
  return { blockSize: Number(flag("--block-size")), tensorParallelSize: plan.tensorParallelSize, dtype: flag("--dtype"), kvCacheDtype: flag("--kv-cache-dtype") };
}
