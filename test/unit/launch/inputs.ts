import type { LaunchInputs } from "../../../lib/launch/plan";
import { parseFleetConfig } from "../../../lib/config/parse";

/** A parsed fleet on hosts `a` (198.18.0.11) and `b` (198.18.0.12), interface fab0, model `m`; `extra` adds config keys. */
export function twoHostFleet(engines: unknown[], extra: Record<string, unknown> = {}) {
  return parseFleetConfig({
    hosts: [
      { alias: "a", destination: "root@198.18.0.11", fabricInterface: "fab0" },
      { alias: "b", destination: "root@198.18.0.12", fabricInterface: "fab0" },
    ],
    engines,
    model: { servedName: "m", checkpointDir: "/models/m" },
    ...extra,
  });
}

/** One NVIDIA engine on two GPUs (resolved, as lib/launch/policy.ts hands them on) with the runbook's default policy; `over` edits the policy. */
export function launchInputs(over: Partial<LaunchInputs["policy"]> = {}, id = "e1"): LaunchInputs {
  return {
    engine: { id, port: 8100, nixlPort: 5600, gpuIds: [0, 1], gpuIdsNamed: true },
    host: { alias: "a", fabricInterface: "fab0", fabricAddress: "198.18.0.11", vendor: "nvidia" },
    model: { servedName: "tiny", checkpointDir: "/models/tiny", dtype: "bfloat16", maxPositionEmbeddings: 8192 },
    policy: {
      vllmCommand: "vllm",
      transport: "tcp",
      dtype: "model",
      kvCacheDtype: "auto",
      blockSize: 128,
      enforceEager: true,
      maxModelLen: 16384,
      maxNumSeqs: 8,
      gpuMemoryUtilization: 0.9,
      tensorParallelSize: 2,
      prefixCaching: false,
      ucxTcpPortRange: "6300-6500",
      kvLeaseDurationS: 30,
      ...over,
    },
  };
}
