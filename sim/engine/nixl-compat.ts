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

/** One factor's value: Python's str, int, float, bool or None. */
export type Factor = string | number | boolean | null;

/** Python's json.dumps(obj, sort_keys=True) for a flat dict of str/int/float/bool/None (vllm hash_factors). */
export function pythonJsonDumps(factors: Record<string, Factor>): string {
  const value = (v: Factor) =>
    typeof v === "string" ? JSON.stringify(v).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`) : v === null ? "null" : String(v);
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
  hmaEnabled: boolean;
}

/**
 * compute_nixl_compatibility_hash in vLLM 0.29.0 (reference/vllm-restart-facts.md): its factors, with no
 * `cross_layers_blocks`; `speculative_config` only for EAGLE/MTP drafts, which the simulator never serves,
 * else None; `transfer_mode` "pull", the NixlConnector's (NixlPullConnector).
 */
export function compatibilityFactors(i: HashInputs): Record<string, Factor> {
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
    is_hma_enabled: i.hmaEnabled,
    speculative_config: null,
    transfer_mode: "pull",
  };
}

export function compatibilityHash(factors: Record<string, Factor>): string {
  return createHash("sha256").update(pythonJsonDumps(factors)).digest("hex");
}

