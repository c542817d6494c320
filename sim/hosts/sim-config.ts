/**
 * The engine simulator's per-host config (read by sim/engine/main.ts through NARWHAL_SIM_CONFIG; its
 * schema is sim/engine/config.ts). The latency coefficients here are the ground truth a profile of this
 * host should recover.
 */
import * as fs from "node:fs";
import { ENGINE_VERSION } from "./constants";
import { hostPaths } from "./paths";
import type { HostSpec } from "../topology";
import type { SimConfigInput } from "../engine/config";

/**
 * A host with no GPU (layout `none`) gets no `gpu` key: its vllm shim hides every device instead
 * (CUDA_VISIBLE_DEVICES=""), so an engine started there fails with "No CUDA GPUs are available" as
 * vLLM does on such a machine.
 */
export function engineSimConfig(host: HostSpec, timeScale: number): SimConfigInput {
  const model = host.layout.model;
  return {
    timeScale,
    ...(model ? { gpu: { product: model.product, memoryGiB: model.memoryGiB, vendor: model.vendor, count: host.layout.count } } : {}),
    latency: { default: { ...host.latency }, byPort: {} },
    version: ENGINE_VERSION,
    startupDelayS: host.startupDelayS,
    // The host's own NIXL release, where its Python finds it first (python-site.ts).
    ...(host.nixl ? { nixl: { site: hostPaths(host.alias).pythonSite } } : {}),
  };
}

export function readSimConfig(file: string): SimConfigInput {
  return JSON.parse(fs.readFileSync(file, "utf8")) as SimConfigInput;
}

/** Writes the config; returns true when the file changed. */
export function writeSimConfig(file: string, config: SimConfigInput): boolean {
  const text = `${JSON.stringify(config, null, 2)}\n`;
  if (fs.existsSync(file) && fs.readFileSync(file, "utf8") === text) return false;
  fs.writeFileSync(file, text);
  return true;
}
