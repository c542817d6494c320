import { resolveTensorParallelSize, tensorParallelFits } from "../config/rules/engines";
import type { EngineSpec, FleetSpec } from "../config/types";
import { engineTransport, renderLaunchPlan, type LaunchInputs, type LaunchPlan } from "./plan";
import { rollingSettings, type RollingSettings } from "../rollout/settings";

/** What discovery found on one host that a launch plan is derived from. */
export interface HostLaunchFacts {
  readonly alias: string;
  readonly fabricInterface: string;
  readonly fabricAddress: string;
  readonly vendor: "nvidia" | "amd" | "none";
  readonly product: string | null;
  /** `renderNode`: an AMD GPU's render node, read from /sys/class/drm. */
  readonly gpus: ReadonlyArray<{ readonly index: number; readonly renderNode?: string }>;
  /** Why no GPU is usable, in the runbook's words, when discovery found none. */
  readonly notice?: string;
  readonly model?: {
    readonly dtype?: string | null;
    readonly maxPositionEmbeddings?: number | null;
    readonly trustRemoteCode?: boolean;
    readonly ssmConvStateLayoutDS?: boolean;
  };
}

export interface PolicyIssue {
  readonly path: string;
  readonly message: string;
}

export class LaunchPolicyError extends Error {
  readonly code = "NARWHAL_LAUNCH_POLICY";
  constructor(readonly issues: ReadonlyArray<PolicyIssue>) {
    super(`launch policy rejected (${issues.length} problem${issues.length === 1 ? "" : "s"}):\n` + issues.map((i) => `  - ${i.path}: ${i.message}`).join("\n"));
  }
}

/**
 * An engine's GPUs: the ones it names, or every GPU its host shows when it names none. The one default
 * of an engine's GPU ids; every later reader takes the plan's `placement.gpuIds`.
 */
export function resolveGpuIds(named: ReadonlyArray<number> | undefined, visible: ReadonlyArray<number>): number[] {
  return named && named.length > 0 ? [...named] : [...visible];
}

/** The facts a plan takes from its host: the config's alias and interface, and what discovery saw. */
export function hostLaunchFacts(
  host: { readonly alias: string; readonly fabricInterface: string },
  fabricAddress: string,
  accelerators: Pick<HostLaunchFacts, "vendor" | "product" | "gpus" | "notice">,
  model: HostLaunchFacts["model"],
): HostLaunchFacts {
  const { vendor, product, gpus, notice } = accelerators;
  return { alias: host.alias, fabricInterface: host.fabricInterface, fabricAddress, vendor, product, gpus, notice, model };
}

/**
 * The launch inputs of one engine: the runbook's policy, overridden by the engine's own settings,
 * applied to what discovery found on its host. Depends on that host's facts only, so a change on
 * another host never touches this engine's plan. Throws `LaunchPolicyError` naming engine, host, field.
 */
export function resolveEngineLaunch(spec: FleetSpec, engine: EngineSpec, facts: HostLaunchFacts, settings?: RollingSettings): LaunchInputs {
  const at = `engines[${engine.index}]`;
  const who = `engine ${engine.id} on host ${facts.alias}`;
  const issues: PolicyIssue[] = [];
  const o = engine.overrides ?? {};
  const visible = facts.gpus.map((g) => g.index);

  if (facts.vendor === "none" || visible.length === 0) {
    issues.push({ path: `${at}.host`, message: `${who}: ${facts.notice ?? "no GPU is visible on this host"}` });
  }
  for (const id of engine.gpuIds ?? []) {
    if (visible.length > 0 && !visible.includes(id)) {
      issues.push({ path: `${at}.gpuIds`, message: `${who}: GPU ${id} is not visible (visible GPUs: ${visible.join(", ")})` });
    }
  }
  const gpus = resolveGpuIds(engine.gpuIds, visible);
  // The ids reach device flags, claims and visibility lists: a probe that read an index twice or not as one is refused here.
  if (new Set(gpus).size !== gpus.length || gpus.some((i) => !Number.isInteger(i) || i < 0)) {
    issues.push({ path: `${at}.host`, message: `${who}: GPU ids ${JSON.stringify(gpus)} must be distinct non-negative integers; discovery read the host's GPU indices as ${JSON.stringify(visible)}` });
  }
  const renderNodes = gpus.map((id) => facts.gpus.find((g) => g.index === id)?.renderNode);
  if (facts.vendor === "amd") {
    for (const [i, id] of gpus.entries()) {
      if (visible.includes(id) && !renderNodes[i]) {
        issues.push({ path: `${at}.host`, message: `${who}: GPU ${id} has no render node: discovery found none under /sys/class/drm for its PCI function; restore the device exposure and run discovery again (pulumi up --refresh)` });
      }
    }
  }
  const tp = resolveTensorParallelSize(o.tensorParallelSize ?? spec.launch.tensorParallelSize, gpus);
  if (gpus.length > 0 && !tensorParallelFits(tp, gpus.length)) {
    const field = o.tensorParallelSize ? `${at}.overrides.tensorParallelSize` : "launch.tensorParallelSize";
    issues.push({ path: field, message: `${who}: tensor parallel size ${tp} does not divide the engine's ${gpus.length} GPU(s) (${gpus.join(", ")})` });
  }

  // The rollout's decision says which (lib/rollout): an engine a rolling change has not reached yet keeps the ones it runs.
  const rolling = settings ?? rollingSettings(spec, engine);
  const engineEnv = rolling.engineEnv ?? {};
  const ds = facts.model?.ssmConvStateLayoutDS ?? false;
  if (ds && engineEnv.VLLM_SSM_CONV_STATE_LAYOUT !== undefined && engineEnv.VLLM_SSM_CONV_STATE_LAYOUT !== "DS") {
    issues.push({
      path: o.engineEnv?.VLLM_SSM_CONV_STATE_LAYOUT !== undefined ? `${at}.overrides.engineEnv` : "launch.engineEnv",
      message: `${who}: VLLM_SSM_CONV_STATE_LAYOUT=${engineEnv.VLLM_SSM_CONV_STATE_LAYOUT} conflicts with the checkpoint's convolutional SSM state, which requires DS`,
    });
  }
  const { transport, rdma } = engineTransport(spec, engine);
  if (issues.length > 0) throw new LaunchPolicyError(issues);

  return {
    engine: { id: engine.id, port: engine.port, nixlPort: engine.nixlPort, gpuIds: gpus, gpuIdsNamed: (engine.gpuIds ?? []).length > 0 },
    host: {
      alias: facts.alias,
      fabricInterface: facts.fabricInterface,
      fabricAddress: facts.fabricAddress,
      vendor: facts.vendor,
      ...(facts.vendor === "amd" ? { renderNodes: renderNodes.map((n) => n ?? "") } : {}),
    },
    model: {
      servedName: spec.model.servedName,
      checkpointDir: spec.model.checkpointDir,
      dtype: facts.model?.dtype ?? undefined,
      maxPositionEmbeddings: facts.model?.maxPositionEmbeddings ?? undefined,
      trustRemoteCode: spec.model.trustRemoteCode ?? facts.model?.trustRemoteCode ?? false,
      ssmConvStateLayoutDS: ds,
      tokenizer: spec.model.tokenizer,
    },
    policy: {
      vllmCommand: spec.runtime.vllmCommand,
      transport,
      dtype: o.dtype ?? spec.launch.dtype,
      kvCacheDtype: o.kvCacheDtype ?? spec.launch.kvCacheDtype,
      blockSize: o.blockSize ?? spec.launch.blockSize,
      enforceEager: spec.launch.enforceEager,
      maxModelLen: rolling.maxModelLen,
      maxNumSeqs: rolling.maxNumSeqs,
      gpuMemoryUtilization: rolling.gpuMemoryUtilization,
      tensorParallelSize: tp,
      prefixCaching: spec.launch.prefixCaching,
      ucxTcpPortRange: spec.launch.ucxTcpPortRange,
      kvLeaseDurationS: spec.launch.kvLeaseDurationS,
      rdmaHcas: rdma?.hcas,
      rdmaGidIndex: rdma?.gidIndex,
      rdmaDevices: rdma?.devices,
      engineArgs: rolling.engineArgs,
      engineEnv: rolling.engineEnv,
    },
  };
}

/** What discovery measured on an engine's host that its plan takes: the Gate A resource's outputs, or the preview's own probe. */
export interface DiscoveredHost {
  readonly fabricAddress: string;
  readonly accelerators: Pick<HostLaunchFacts, "vendor" | "product" | "gpus" | "notice">;
  readonly model: HostLaunchFacts["model"];
}

/**
 * The one way from discovery's facts and the config to an engine's launch plan, rendered once: Gate A
 * (components/discovery.ts) hands its result to the engine, the replica agreement and the generated
 * configuration, and the preview's adoption forecast (lib/adoption/preview-reads.ts) decides against the
 * same function's result. Throws `LaunchPolicyError` naming engine, host and field.
 */
export function engineLaunchPlan(spec: FleetSpec, engine: EngineSpec, discovered: DiscoveredHost, settings?: RollingSettings): LaunchPlan {
  const host = spec.hosts.find((h) => h.alias === engine.host);
  if (!host) throw new LaunchPolicyError([{ path: `engines[${engine.index}].host`, message: `engine ${engine.id}: no host has alias ${engine.host}` }]);
  return renderLaunchPlan(resolveEngineLaunch(spec, engine, hostLaunchFacts(host, discovered.fabricAddress, discovered.accelerators, discovered.model), settings));
}

/** One replica as the fleet-wide check sees it. */
export interface ReplicaShape {
  readonly engineIndex: number;
  readonly id: string;
  readonly host: string;
  readonly product: string | null;
  readonly tensorParallelSize: number;
}

/**
 * Runbook, Gate A: all replicas must have matching accelerator product and TP shape. Checked across
 * the fleet after each engine's inputs resolve (the ReplicaAgreement gate); it feeds no engine's plan.
 */
export function checkReplicaShapes(replicas: ReadonlyArray<ReplicaShape>): PolicyIssue[] {
  const [first, ...rest] = replicas;
  if (!first) return [];
  const issues: PolicyIssue[] = [];
  for (const r of rest) {
    if (r.product !== first.product) {
      issues.push({
        path: `engines[${r.engineIndex}].host`,
        message: `engine ${r.id} on host ${r.host} has ${r.product ?? "no GPU"}, but engine ${first.id} on host ${first.host} has ${first.product ?? "no GPU"}; all replicas must share one accelerator product`,
      });
    }
    if (r.tensorParallelSize !== first.tensorParallelSize) {
      issues.push({
        path: `engines[${r.engineIndex}].overrides.tensorParallelSize`,
        message: `engine ${r.id} on host ${r.host} runs TP ${r.tensorParallelSize}, but engine ${first.id} runs TP ${first.tensorParallelSize}; all replicas must share one TP shape`,
      });
    }
  }
  return issues;
}
