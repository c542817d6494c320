/**
 * What vLLM's platform layer decides from the (simulated) hardware and the device-visibility environment:
 * which GPUs this process sees, and which attention backend it uses.
 */
import type { SimConfig } from "./config";
import { StartupError } from "./errors";

export interface Platform {
  vendor: "nvidia" | "amd";
  product: string;
  memoryGiB: number;
  /** Device indices this process sees, as the *_VISIBLE_DEVICES value lists them. */
  visibleDevices: string[];
  /** The env var the devices came from ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES") or null (all). */
  visibilitySource: string | null;
  /** Attention backend name as vLLM reports it (and hashes it for NIXL). */
  attentionBackend: string;
}

function splitDevices(value: string): string[] {
  return value
    .split(",")
    .map((d) => d.trim())
    .filter((d) => d !== "");
}

/**
 * Resolves device visibility. On ROCm, vllm/platforms/rocm.py copies HIP_VISIBLE_DEVICES into
 * CUDA_VISIBLE_DEVICES and asserts the two are equal when both are set; the simulator does the same
 * (mutating `env` like vLLM mutates os.environ).
 */
export function resolvePlatform(sim: SimConfig, env: NodeJS.ProcessEnv, useMla: boolean, tensorParallelSize: number): Platform {
  const vendor = sim.gpu.vendor;
  let source: string | null = null;
  if (vendor === "amd" && env.HIP_VISIBLE_DEVICES !== undefined) {
    const hip = env.HIP_VISIBLE_DEVICES;
    const cuda = env.CUDA_VISIBLE_DEVICES;
    if (cuda) {
      if (cuda !== hip) {
        throw new StartupError("AssertionError", `HIP_VISIBLE_DEVICES (${hip}) and CUDA_VISIBLE_DEVICES (${cuda}) are both set and differ`);
      }
    } else {
      env.CUDA_VISIBLE_DEVICES = hip;
    }
    source = "HIP_VISIBLE_DEVICES";
  }
  let visible: string[];
  if (env.CUDA_VISIBLE_DEVICES !== undefined) {
    source ??= "CUDA_VISIBLE_DEVICES";
    visible = splitDevices(env.CUDA_VISIBLE_DEVICES);
    const bad = visible.find((d) => /^\d+$/.test(d) && Number(d) >= sim.gpu.count);
    if (bad !== undefined) {
      throw new StartupError("RuntimeError", `CUDA error: invalid device ordinal (${source}=${env.CUDA_VISIBLE_DEVICES}; the host has ${sim.gpu.count} GPU(s))`);
    }
  } else {
    visible = Array.from({ length: sim.gpu.count }, (_, i) => String(i));
  }
  if (visible.length === 0) throw new StartupError("RuntimeError", "No CUDA GPUs are available");
  if (tensorParallelSize > visible.length) {
    throw new StartupError(
      "ValueError",
      `World size (${tensorParallelSize}) is larger than the number of available GPUs (${visible.length}) in this node. ` +
        `Make sure to set \`${source ?? "CUDA_VISIBLE_DEVICES"}\` to at least ${tensorParallelSize} devices.`,
    );
  }
  const attentionBackend = useMla ? (vendor === "amd" ? "ROCM_AITER_MLA" : "FLASHMLA") : vendor === "amd" ? "ROCM_ATTN" : "FLASH_ATTN";
  return { vendor, product: sim.gpu.product, memoryGiB: sim.gpu.memoryGiB, visibleDevices: visible, visibilitySource: source, attentionBackend };
}
