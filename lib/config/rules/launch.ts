/**
 * Rules over launch policy, fleet-wide and per engine: settings the program owns cannot be overridden,
 * and UCX over RDMA needs its devices.
 */
import type { PathSegment } from "../errors";
import { engineName, type Report, type Rule } from "./context";

/** Environment the program sets itself, and the config that controls each instead. */
const OWNED_ENV: Record<string, string> = {
  VLLM_NIXL_SIDE_CHANNEL_HOST: "the host's fabric address (hosts[].fabricAddress)",
  VLLM_NIXL_SIDE_CHANNEL_PORT: "engines[].nixlPort",
  UCX_TLS: "launch.transport",
  UCX_NET_DEVICES: "the fabric interface or rdma.hcas",
  UCX_IB_GID_INDEX: "rdma.gidIndex",
  CUDA_VISIBLE_DEVICES: "engines[].gpuIds",
  HIP_VISIBLE_DEVICES: "engines[].gpuIds",
  VLLM_API_KEY: "the engineApiKey secret",
  UCX_TCP_PORT_RANGE: "engines[].transferPortRange or launch.ucxTcpPortRange",
};

/** vLLM flags the program sets itself, and the config that controls each instead. */
const OWNED_FLAGS: Record<string, string> = {
  "--port": "engines[].port",
  "--host": "the engine's listen address",
  "--kv-transfer-config": "launch.transport and launch.kvLeaseDurationS",
  "--api-key": "the engineApiKey secret",
  "--served-model-name": "model.servedName",
};

/** `--served_model_name=x` and `--served-model-name x` are the same flag to vLLM's parser. */
function flagName(arg: string): string | undefined {
  return arg.startsWith("--") ? arg.split("=")[0].replace(/_/g, "-") : undefined;
}

function checkOwned(
  env: Record<string, string> | undefined,
  args: readonly string[] | undefined,
  path: PathSegment[],
  who: string,
  report: Report,
): void {
  for (const name of Object.keys(env ?? {})) {
    const source = OWNED_ENV[name];
    if (source) {
      report(
        [...path, "engineEnv", name],
        `${who} overrides ${name}, which the program sets itself from ${source}; remove it from engineEnv`,
      );
    }
  }
  (args ?? []).forEach((arg, k) => {
    const flag = flagName(arg);
    const source = flag === undefined ? undefined : OWNED_FLAGS[flag];
    if (source) {
      report([...path, "engineArgs", k], `${who} passes ${flag}, which the program sets itself from ${source}; remove it from engineArgs`);
    }
  });
}

export const launchRules: Rule = (ctx, report) => {
  const launch = ctx.launch.value;
  checkOwned(launch.engineEnv, launch.engineArgs, ["launch"], "launch (every engine)", report);
  ctx.engines.forEach((engine, i) => {
    const o = engine.value.overrides;
    if (o) checkOwned(o.engineEnv, o.engineArgs, ["engines", i, "overrides"], `engine ${engineName(ctx, i)}`, report);
  });
  rdmaDevices(ctx, report);
};

/**
 * UCX over RDMA needs HCAs (UCX_NET_DEVICES), and a container needs the device nodes mapped. The
 * fleet-wide case is reported once at `launch.rdma`, naming the engines it leaves without devices.
 */
const rdmaDevices: Rule = (ctx, report) => {
  if (ctx.launch.failed.has("rdma") || ctx.launch.failed.has("transport")) return;
  const launch = ctx.launch.value;
  const container = ctx.runtime.value.kind === "docker" || ctx.runtime.value.kind === "docker-cli";
  const globalMissing: string[] = [];
  const globalNoDevices: string[] = [];
  ctx.engines.forEach((engine, i) => {
    const o = engine.value.overrides;
    if (engine.failed.has("overrides") || (o?.transport ?? launch.transport) !== "ucx_rdma") return;
    const rdma = o?.rdma ?? launch.rdma;
    const own = o?.transport === "ucx_rdma" || o?.rdma !== undefined;
    const name = engineName(ctx, i);
    if (!rdma) {
      if (own) {
        report(
          ["engines", i, "overrides", "rdma", "hcas"],
          `engine ${name} uses transport "ucx_rdma" but lists no RDMA HCAs; set overrides.rdma.hcas (e.g. ["mlx5_0:1"]) or launch.rdma.hcas, or use transport "tcp"`,
        );
      } else globalMissing.push(name);
    } else if (container && rdma.devices.length === 0) {
      if (o?.rdma) {
        report(
          ["engines", i, "overrides", "rdma", "devices"],
          `engine ${name} runs in a container with transport "ucx_rdma" but maps no RDMA devices; list them (e.g. ["/dev/infiniband/uverbs0"])`,
        );
      } else globalNoDevices.push(name);
    }
  });
  const noEngines = ctx.engines.length === 0 && launch.transport === "ucx_rdma" && !launch.rdma;
  if (globalMissing.length > 0 || noEngines) {
    const who = noEngines ? "" : ` (engine${globalMissing.length === 1 ? "" : "s"} ${globalMissing.join(", ")} ha${globalMissing.length === 1 ? "s" : "ve"} no overrides.rdma)`;
    report(
      ["launch", "rdma", "hcas"],
      `transport "ucx_rdma" needs RDMA HCAs and launch.rdma is not set${who}; ` +
        `set launch.rdma.hcas (e.g. ["mlx5_0:1"]) and launch.rdma.devices, or use transport "tcp"`,
    );
  }
  if (globalNoDevices.length > 0) {
    report(
      ["launch", "rdma", "devices"],
      `engine(s) ${globalNoDevices.join(", ")} run in containers with transport "ucx_rdma" but no RDMA devices are mapped; ` +
        `list them (e.g. ["/dev/infiniband/uverbs0"])`,
    );
  }
};
