/**
 * The KV geometry no log line carries, from the model's config.json and the plan: layers holding paged
 * KV, KV heads, head size, MLA, and the dtype the engine resolved. vLLM never logs heads per rank; they
 * are `max(1, total_kv_heads // tp)` (1 for MLA), computed where the layout is assembled.
 */
import { modelRequirements, type ModelSource } from "../discovery/model";
import { normaliseDtype } from "./cache-layout";
import { EngineError } from "./errors";

/** The KV-relevant part of the model's config.json, with the dtype the engine serves it in. */
export interface ModelKvGeometry {
  /** The dtype the engine resolved (the plan's `--dtype`, or for `auto` the checkpoint's, as vLLM resolves it). */
  readonly dtype: string;
  /** Layers holding paged KV (num_hidden_layers minus a hybrid model's linear-attention layers). */
  readonly kvLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  /** DeepSeek-style MLA: one latent vector per token, no K/V split and no head split. */
  readonly mla?: { readonly kvLoraRank: number; readonly qkRopeHeadDim: number };
  /** sha256 (hex) of the exact config.json bytes the geometry was read from. */
  readonly configSha256?: string;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** Linear-attention layers listed by `linear_attn_config.kda_layers` (top level or under text_config): they keep no paged KV. */
function linearAttentionLayers(config: Json): number {
  for (const scope of [config, isObject(config.text_config) ? config.text_config : {}]) {
    const linear = scope.linear_attn_config;
    if (isObject(linear) && Array.isArray(linear.kda_layers)) return linear.kda_layers.length;
  }
  return 0;
}

/**
 * vLLM's dtype for `--dtype auto`: the checkpoint's float16 stays float16; bfloat16, float32 and an
 * unspecified dtype are served in bfloat16 (on GPUs that have it, which every GPU Narwhal runs on does).
 */
function resolvedDtype(planDtype: string, checkpoint: string | null): string {
  if (normaliseDtype(planDtype) !== "auto") return normaliseDtype(planDtype);
  return checkpoint !== null && normaliseDtype(checkpoint) === "float16" ? "float16" : "bfloat16";
}

/** The geometry from config.json's exact bytes; a config without layers, heads or head size is refused naming the file. */
export function modelKvGeometry(configJson: string | Buffer, planDtype: string, source: ModelSource & { host: string; dir: string }): ModelKvGeometry {
  const file = `${source.dir.replace(/\/+$/, "")}/config.json`;
  let req;
  try {
    req = modelRequirements(configJson, null, source);
  } catch (err) {
    throw new EngineError("NARWHAL_CACHE_LAYOUT_SOURCE", (err as Error).message);
  }
  const missing = [
    req.numHiddenLayers === null ? "num_hidden_layers" : "",
    req.numKvHeads === null ? "num_key_value_heads (or num_attention_heads)" : "",
    req.headDim === null ? "head_dim (or hidden_size and num_attention_heads)" : "",
  ].filter(Boolean);
  if (missing.length) {
    throw new EngineError("NARWHAL_CACHE_LAYOUT_SOURCE", `host ${source.host}: ${file} has no ${missing.join(", ")}, so the cache geometry cannot be computed; check the checkpoint`);
  }
  const config = JSON.parse((typeof configJson === "string" ? configJson : configJson.toString("utf8")).replace(/^\uFEFF/, "")) as Json;
  return {
    dtype: resolvedDtype(planDtype, req.dtype),
    kvLayers: req.numHiddenLayers! - linearAttentionLayers(config),
    numKvHeads: req.numKvHeads!,
    headDim: req.headDim!,
    ...(req.mla ? { mla: req.mla } : {}),
    configSha256: req.configSha256,
  };
}
