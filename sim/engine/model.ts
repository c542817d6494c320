/**
 * The model directory as vLLM sees it at startup: the HF config.json (architecture and attention geometry)
 * and the checks vLLM makes before it loads weights. Each refusal is worded like vLLM's so that a runbook
 * step written against a real engine ("if vLLM exits requesting trust_remote_code=True or
 * VLLM_SSM_CONV_STATE_LAYOUT=DS ...") reads the same against the simulator.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { EngineArgs } from "./args";
import { StartupError } from "./errors";

export type TorchDtype = "bfloat16" | "float16" | "float32";

export interface ModelInfo {
  /** As given on the command line (vLLM's model_config.model). */
  path: string;
  architecture: string;
  modelType: string;
  hiddenSize: number;
  numHiddenLayers: number;
  numAttentionHeads: number;
  /** Total KV heads (before tensor parallelism). */
  numKvHeads: number;
  headDim: number;
  maxPositionEmbeddings: number;
  vocabSize: number;
  intermediateSize: number;
  tieWordEmbeddings: boolean;
  /** config.json's torch_dtype, if any. */
  configDtype: TorchDtype | null;
  hasAutoMap: boolean;
  /** Multi-head latent attention (DeepSeek style): cache holds kv_lora_rank + qk_rope_head_dim per token. */
  mla: { kvLoraRank: number; qkRopeHeadDim: number } | null;
  /** A hybrid model whose linear-attention layers keep a short-convolution state (Kimi-Linear KDA style). */
  convSsm: { kdaLayers: number[]; shortConvKernelSize: number } | null;
}

type Json = Record<string, unknown>;

function num(cfg: Json, key: string): number | undefined {
  const v = cfg[key];
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

function requireNum(cfg: Json, key: string, file: string): number {
  const v = num(cfg, key);
  if (v === undefined) throw new StartupError("ValueError", `${file}: required field '${key}' is missing or not a number`);
  return v;
}

function readJson(file: string): Json {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new StartupError("OSError", `Can't load the configuration of '${file}': ${(err as Error).message}`);
  }
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value)) return value as Json;
  } catch {
    // fall through to the error below
  }
  throw new StartupError("OSError", `It looks like the config file at '${file}' is not a valid JSON file.`);
}

export function trustRemoteCodeError(path: string): StartupError {
  return new StartupError(
    "ValueError",
    `The repository ${path} contains custom code which must be executed to correctly load the model. ` +
      `You can inspect the repository content at ${path} .\n` +
      "Please pass the argument `trust_remote_code=True` to allow custom code to be run.\n" +
      "Failed to load the model config. If the model is a custom model not yet available in the HuggingFace " +
      "transformers library, consider setting `trust_remote_code=True` in LLM or using the `--trust-remote-code` " +
      "flag in the CLI.",
  );
}

function parseDtype(v: unknown): TorchDtype | null {
  return v === "bfloat16" || v === "float16" || v === "float32" ? v : null;
}

/** Reads `<dir>/config.json`; refuses custom code without --trust-remote-code, as transformers does. */
export function loadModelInfo(args: EngineArgs): ModelInfo {
  const file = join(args.model, "config.json");
  if (!existsSync(file)) {
    throw new StartupError(
      "ValueError",
      `Invalid repository ID or local directory specified: '${args.model}'. ` +
        "Please verify the following requirements:\n1. Provide a valid Hugging Face repository ID.\n" +
        "2. Specify a local directory that contains a recognized configuration file.\n" +
        "   - For Hugging Face models: ensure the presence of a 'config.json'.",
    );
  }
  const top = readJson(file);
  const hasAutoMap = top.auto_map !== undefined;
  if (hasAutoMap && !args.trustRemoteCode) throw trustRemoteCodeError(args.model);
  // Multimodal and hybrid configs keep the language model's geometry under text_config.
  const text: Json = top.text_config && typeof top.text_config === "object" ? { ...top, ...(top.text_config as Json) } : top;
  const hiddenSize = requireNum(text, "hidden_size", file);
  const numAttentionHeads = requireNum(text, "num_attention_heads", file);
  const linear = (text.linear_attn_config ?? top.linear_attn_config) as Json | undefined;
  const kdaLayers = Array.isArray(linear?.kda_layers) ? (linear.kda_layers as unknown[]).filter((x): x is number => typeof x === "number") : [];
  const kernel = linear ? num(linear, "short_conv_kernel_size") : undefined;
  const kvLoraRank = num(text, "kv_lora_rank");
  const qkRope = num(text, "qk_rope_head_dim");
  const architectures = Array.isArray(top.architectures) ? top.architectures : [];
  return {
    path: args.model,
    architecture: typeof architectures[0] === "string" ? architectures[0] : "UnknownForCausalLM",
    modelType: typeof top.model_type === "string" ? top.model_type : "unknown",
    hiddenSize,
    numHiddenLayers: requireNum(text, "num_hidden_layers", file),
    numAttentionHeads,
    numKvHeads: num(text, "num_key_value_heads") ?? numAttentionHeads,
    headDim: num(text, "head_dim") ?? hiddenSize / numAttentionHeads,
    maxPositionEmbeddings: requireNum(text, "max_position_embeddings", file),
    vocabSize: num(text, "vocab_size") ?? 32000,
    intermediateSize: num(text, "intermediate_size") ?? 4 * hiddenSize,
    tieWordEmbeddings: text.tie_word_embeddings === true,
    configDtype: parseDtype(text.torch_dtype ?? text.dtype),
    hasAutoMap,
    mla: kvLoraRank !== undefined && qkRope !== undefined ? { kvLoraRank, qkRopeHeadDim: qkRope } : null,
    convSsm: kdaLayers.length > 0 || kernel !== undefined ? { kdaLayers, shortConvKernelSize: kernel ?? 4 } : null,
  };
}

/**
 * vLLM's dtype resolution: "auto" takes config.json's torch_dtype, except that float32 checkpoints (and
 * configs without a dtype) are served in bfloat16 on GPUs that support it, as vLLM does.
 */
export function resolveDtype(requested: EngineArgs["dtype"], model: ModelInfo): TorchDtype {
  switch (requested) {
    case "half":
    case "float16":
      return "float16";
    case "float":
    case "float32":
      return "float32";
    case "bfloat16":
      return "bfloat16";
    default:
      return model.configDtype === "float16" ? "float16" : "bfloat16";
  }
}

/** --max-model-len, checked against the checkpoint like vLLM's ModelConfig validator. */
export function resolveMaxModelLen(args: EngineArgs, model: ModelInfo, env: NodeJS.ProcessEnv): number {
  const derived = model.maxPositionEmbeddings;
  if (args.maxModelLen === null) return derived;
  if (args.maxModelLen > derived && env.VLLM_ALLOW_LONG_MAX_MODEL_LEN !== "1") {
    throw new StartupError(
      "pydantic_core._pydantic_core.ValidationError",
      "1 validation error for ModelConfig\n  Value error, " +
        `User-specified max_model_len (${args.maxModelLen}) is greater than the derived max_model_len ` +
        `(max_position_embeddings=${derived} or model_max_length=None in model's config.json). ` +
        "To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. " +
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position " +
        "encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses absolute " +
        "position encoding, positions exceeding derived_max_model_len will cause a CUDA array out-of-bounds error.",
    );
  }
  return args.maxModelLen;
}

/** Checks vLLM makes while building the model and its parallel layout. */
export function checkModelRuntime(args: EngineArgs, model: ModelInfo, env: NodeJS.ProcessEnv): void {
  if (model.numAttentionHeads % args.tensorParallelSize !== 0) {
    throw new StartupError(
      "ValueError",
      `Total number of attention heads (${model.numAttentionHeads}) must be divisible by tensor parallel size (${args.tensorParallelSize}).`,
    );
  }
  // A conv-SSM model's state can only be moved between engines in the DS layout. vLLM asserts this when
  // the NIXL connector registers the state; the simulator refuses at startup regardless of connector,
  // which is how Narwhal's launch contract treats such models (discovery always sets DS for them).
  if (model.convSsm && env.VLLM_SSM_CONV_STATE_LAYOUT !== "DS") {
    throw new StartupError("AssertionError", "3-read Mamba conv transfer requires DS conv state layout. Set VLLM_SSM_CONV_STATE_LAYOUT=DS");
  }
}
