/**
 * vLLM's NIXL compatibility hash (compute_nixl_compatibility_hash): SHA-256 over the factors that make two
 * engines' KV caches interchangeable, serialised exactly as Python's json.dumps(sort_keys=True) does, so
 * the simulator's hash equals a real engine's for the same inputs.
 */
import { createHash } from "node:crypto";
import type { CacheGeometry } from "./geometry";

/**
 * vLLM 0.29.0's NIXL_CONNECTOR_VERSION (9: block_strides), the value the simulated vllm package declares in
 * sim/python/vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py, where the image check reads it.
 */
export const NIXL_CONNECTOR_VERSION = 9;

/** Python's json.dumps(obj, sort_keys=True) for a flat dict of str/int/float/bool (vllm hash_factors). */
export function pythonJsonDumps(factors: Record<string, string | number | boolean>): string {
  const value = (v: string | number | boolean) =>
    typeof v === "string" ? JSON.stringify(v).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`) : String(v);
  const body = Object.keys(factors)
    .sort()
    .map((k) => `${JSON.stringify(k)}: ${value(factors[k])}`)
    .join(", ");
  return `{${body}}`;
}

export interface HashInputs {
  vllmVersion: string;
  model: string;
  geometry: CacheGeometry;
  crossLayersBlocks: boolean;
  hmaEnabled: boolean;
}

/** compute_nixl_compatibility_hash: SHA-256 over the factors that make two engines' KV interchangeable. */
export function compatibilityFactors(i: HashInputs): Record<string, string | number | boolean> {
  return {
    vllm_version: i.vllmVersion,
    nixl_connector_version: NIXL_CONNECTOR_VERSION,
    model: i.model,
    dtype: `torch.${i.geometry.dtype}`,
    num_kv_heads: i.geometry.numKvHeads,
    head_size: i.geometry.headDim,
    num_hidden_layers: i.geometry.numHiddenLayers,
    attn_backend_name: i.geometry.attentionBackend,
    cache_dtype: i.geometry.cacheDtype,
    cross_layers_blocks: i.crossLayersBlocks,
    is_hma_enabled: i.hmaEnabled,
  };
}

export function compatibilityHash(factors: Record<string, string | number | boolean>): string {
  return createHash("sha256").update(pythonJsonDumps(factors)).digest("hex");
}

