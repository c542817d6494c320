/**
 * What a checkpoint asks of its serving engine, read from config.json (and tokenizer_config.json):
 * the runbook's Gate A records dtype, context length, KV geometry, `auto_map` (→ --trust-remote-code),
 * convolutional SSM transfer state (→ VLLM_SSM_CONV_STATE_LAYOUT=DS), tokenizer metadata and the
 * sha256 of the exact config.json bytes that Gate C compares before launch.
 */
import { createHash } from "node:crypto";

/** Where the bytes came from, so an error names the host and the file. */
export interface ModelSource {
  readonly host?: string;
  /** The checkpoint directory (model.checkpointDir). */
  readonly dir?: string;
}

export interface TokenizerMetadata {
  readonly tokenizerClass: string | null;
  /** null when absent or when it is transformers' "unbounded" sentinel (≈1e30). */
  readonly modelMaxLength: number | null;
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  /** tokenizer_config.json carries a chat_template (a string or a list of named templates). */
  readonly chatTemplate: boolean;
}

export interface ModelRequirements {
  /** `architectures[0]`, e.g. "LlamaForCausalLM". */
  readonly architecture: string | null;
  readonly architectures: ReadonlyArray<string>;
  readonly modelType: string | null;
  /** torch_dtype (or the newer `dtype`) of config or text_config; null when the checkpoint does not say. */
  readonly dtype: string | null;
  /** The field the dtype came from, e.g. "torch_dtype" or "text_config.torch_dtype". */
  readonly dtypeField: string | null;
  readonly maxPositionEmbeddings: number | null;
  readonly maxPositionEmbeddingsField: string | null;
  readonly numHiddenLayers: number | null;
  readonly numKvHeads: number | null;
  readonly headDim: number | null;
  /** Multi-head latent attention (DeepSeek-style): the cache holds one latent of kv_lora_rank + qk_rope_head_dim per token. */
  readonly mla: { readonly kvLoraRank: number; readonly qkRopeHeadDim: number } | null;
  /** `auto_map` in config.json or tokenizer_config.json: vLLM refuses the checkpoint without --trust-remote-code. */
  readonly trustRemoteCode: boolean;
  /** Which file and which auto classes, e.g. "config.json has auto_map (AutoConfig, AutoModelForCausalLM)". */
  readonly trustRemoteCodeReason: string | null;
  /** Convolutional SSM transfer state: vLLM 0.29 resolves SD by default, so DS must be set explicitly. */
  readonly ssmConvStateLayoutDS: boolean;
  /** The fields that triggered it, as paths: "text_config.linear_attn_config.kda_layers". */
  readonly ssmConvStateFields: ReadonlyArray<string>;
  /** null when no tokenizer_config.json was given. */
  readonly tokenizer: TokenizerMetadata | null;
  /** sha256 (hex) of the exact config.json bytes, as `sha256sum config.json` prints it. */
  readonly configSha256: string;
}

/** A missing or unusable config.json: `message` names host and path, `detail` omits the host. */
export class ModelConfigError extends Error {
  constructor(
    message: string,
    readonly detail: string,
  ) {
    super(message);
  }
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);
const posInt = (v: unknown): number | null => (typeof v === "number" && Number.isInteger(v) && v > 0 ? v : null);

function filePath(source: ModelSource | undefined, name: string): string {
  return source?.dir ? `${source.dir.replace(/\/+$/, "")}/${name}` : name;
}

function fail(source: ModelSource | undefined, detail: string): never {
  throw new ModelConfigError(source?.host ? `host ${source.host}: ${detail}` : detail, detail);
}

function parseJsonObject(bytes: string | Buffer, source: ModelSource | undefined, name: string): Json {
  const text = typeof bytes === "string" ? bytes : bytes.toString("utf8");
  let value: unknown;
  try {
    value = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (e) {
    fail(source, `${filePath(source, name)} is not valid JSON (${(e as Error).message.replace(/\s+/g, " ")}); restage the checkpoint`);
  }
  if (!isObject(value)) fail(source, `${filePath(source, name)} does not hold a JSON object; restage the checkpoint`);
  return value;
}

/** The first of `fields` (looked up in config, then text_config) holding a value `pick` accepts. */
function firstOf<T>(config: Json, fields: ReadonlyArray<string>, pick: (v: unknown) => T | null): { value: T; field: string } | null {
  const scopes: Array<[string, Json]> = [["", config]];
  if (isObject(config.text_config)) scopes.push(["text_config.", config.text_config]);
  for (const [prefix, scope] of scopes) {
    for (const f of fields) {
      const value = pick(scope[f]);
      if (value !== null) return { value, field: prefix + f };
    }
  }
  return null;
}

/** Context length fields in the order vLLM's max-model-len derivation consults them. */
const MAX_LEN_FIELDS = ["max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_sequence_length", "max_seq_length", "seq_len"];

/** The KV geometry of the language model: text_config wins for multimodal checkpoints. */
function geometry(config: Json): {
  layers: number | null;
  kvHeads: number | null;
  headDim: number | null;
  mla: { kvLoraRank: number; qkRopeHeadDim: number } | null;
} {
  const scope = isObject(config.text_config) ? { ...config, ...config.text_config } : config;
  const layers = posInt(scope.num_hidden_layers) ?? posInt(scope.n_layer) ?? posInt(scope.num_layers) ?? posInt(scope.n_layers);
  const kvLoraRank = posInt(scope.kv_lora_rank);
  const qkRopeHeadDim = posInt(scope.qk_rope_head_dim);
  if (kvLoraRank && qkRopeHeadDim) {
    // vLLM caches one latent "head" per token for MLA.
    return { layers, kvHeads: 1, headDim: kvLoraRank + qkRopeHeadDim, mla: { kvLoraRank, qkRopeHeadDim } };
  }
  const heads = posInt(scope.num_attention_heads) ?? posInt(scope.n_head) ?? posInt(scope.n_heads);
  const kvHeads =
    posInt(scope.num_key_value_heads) ??
    posInt(scope.num_kv_heads) ??
    posInt(scope.n_head_kv) ??
    (scope.multi_query_attention === true ? (posInt(scope.multi_query_group_num) ?? 1) : null) ??
    heads;
  const hidden = posInt(scope.hidden_size) ?? posInt(scope.n_embd) ?? posInt(scope.d_model);
  const headDim = posInt(scope.head_dim) ?? (hidden && heads && hidden % heads === 0 ? hidden / heads : null);
  return { layers, kvHeads, headDim, mla: null };
}

/** Auto classes named by an `auto_map`, or null when there is none. */
function autoMapClasses(v: unknown): string[] | null {
  if (isObject(v)) return Object.keys(v).length > 0 ? Object.keys(v) : null;
  if (Array.isArray(v)) return v.length > 0 ? v.map(String) : null;
  return null;
}

/** Subtrees that describe other modalities' encoders, never the language model's transfer state. */
const OTHER_MODALITY = /vision|visual|audio|speech|image|video/i;

/**
 * Fields whose presence means the model keeps a convolutional SSM state that NIXL transfers
 * (KDA, gated delta net, Mamba/Mamba2 hybrids, short convolutions). Each accepts a value only if it
 * really describes conv layers: a non-empty layer list or a positive kernel width.
 */
const CONV_STATE_FIELDS: Record<string, (v: unknown, parentKey: string) => boolean> = {
  kda_layers: (v) => Array.isArray(v) && v.length > 0,
  short_conv_kernel_size: (v) => posInt(v) !== null,
  linear_conv_kernel_dim: (v) => posInt(v) !== null,
  mamba_d_conv: (v) => posInt(v) !== null,
  conv_kernel: (v) => posInt(v) !== null,
  conv_L_cache: (v) => posInt(v) !== null,
  d_conv: (v, parent) => parent === "ssm_cfg" && posInt(v) !== null,
};

function convStateFields(config: Json): string[] {
  const found: string[] = [];
  const walk = (obj: Json, path: string, parentKey: string) => {
    // A linear-attention block that lists no KDA layers has no conv state, whatever its kernel size.
    const noKdaLayers = Array.isArray(obj.kda_layers) && obj.kda_layers.length === 0;
    for (const [key, value] of Object.entries(obj)) {
      const here = path ? `${path}.${key}` : key;
      const accept = CONV_STATE_FIELDS[key];
      if (accept && !noKdaLayers && accept(value, parentKey)) found.push(here);
      if (isObject(value) && !OTHER_MODALITY.test(key)) walk(value, here, key);
    }
  };
  walk(config, "", "");
  return found;
}

/** A special token as tokenizer_config.json writes it: a string or a serialized AddedToken. */
function tokenText(v: unknown): string | null {
  if (typeof v === "string") return v;
  if (isObject(v) && typeof v.content === "string") return v.content;
  return null;
}

/** transformers writes int(1e30) when a tokenizer has no length limit. */
const UNBOUNDED_MODEL_MAX_LENGTH = 1e18;

function tokenizerMetadata(t: Json): TokenizerMetadata {
  const max = typeof t.model_max_length === "number" && t.model_max_length > 0 && t.model_max_length < UNBOUNDED_MODEL_MAX_LENGTH ? t.model_max_length : null;
  const template = t.chat_template;
  return {
    tokenizerClass: str(t.tokenizer_class),
    modelMaxLength: max,
    bosToken: tokenText(t.bos_token),
    eosToken: tokenText(t.eos_token),
    chatTemplate: (typeof template === "string" && template.trim() !== "") || (Array.isArray(template) && template.length > 0),
  };
}

/**
 * Reads a checkpoint's requirements from the exact bytes of its config.json (and tokenizer_config.json
 * when given). A missing (null/undefined) or invalid config.json throws ModelConfigError naming the
 * host and path from `source`; an invalid tokenizer_config.json throws likewise.
 */
export function modelRequirements(
  configJson: string | Buffer | null | undefined,
  tokenizerConfigJson?: string | Buffer | null,
  source?: ModelSource,
): ModelRequirements {
  if (configJson === null || configJson === undefined) {
    fail(source, `${filePath(source, "config.json")} is missing; stage the checkpoint there (model.checkpointDir) before discovery`);
  }
  const bytes = typeof configJson === "string" ? Buffer.from(configJson, "utf8") : configJson;
  const config = parseJsonObject(bytes, source, "config.json");
  const tokenizerConfig =
    tokenizerConfigJson === null || tokenizerConfigJson === undefined ? null : parseJsonObject(tokenizerConfigJson, source, "tokenizer_config.json");

  const architectures = Array.isArray(config.architectures) ? config.architectures.filter((a): a is string => typeof a === "string") : [];
  const dtype = firstOf(config, ["torch_dtype", "dtype"], str);
  const maxLen = firstOf(config, MAX_LEN_FIELDS, posInt);
  const geo = geometry(config);

  const reasons: string[] = [];
  const configAuto = autoMapClasses(config.auto_map);
  if (configAuto) reasons.push(`config.json has auto_map (${configAuto.join(", ")})`);
  const textAuto = isObject(config.text_config) ? autoMapClasses(config.text_config.auto_map) : null;
  if (textAuto) reasons.push(`config.json has text_config.auto_map (${textAuto.join(", ")})`);
  const tokAuto = tokenizerConfig ? autoMapClasses(tokenizerConfig.auto_map) : null;
  if (tokAuto) reasons.push(`tokenizer_config.json has auto_map (${tokAuto.join(", ")})`);

  const convFields = convStateFields(config);
  return {
    architecture: architectures[0] ?? null,
    architectures,
    modelType: str(config.model_type) ?? (isObject(config.text_config) ? str(config.text_config.model_type) : null),
    dtype: dtype?.value ?? null,
    dtypeField: dtype?.field ?? null,
    maxPositionEmbeddings: maxLen?.value ?? null,
    maxPositionEmbeddingsField: maxLen?.field ?? null,
    numHiddenLayers: geo.layers,
    numKvHeads: geo.kvHeads,
    headDim: geo.headDim,
    mla: geo.mla,
    trustRemoteCode: reasons.length > 0,
    trustRemoteCodeReason: reasons.length > 0 ? reasons.join("; ") : null,
    ssmConvStateLayoutDS: convFields.length > 0,
    ssmConvStateFields: convFields,
    tokenizer: tokenizerConfig ? tokenizerMetadata(tokenizerConfig) : null,
    configSha256: createHash("sha256").update(bytes).digest("hex"),
  };
}

/** One checkpoint file as the probe prints it: a status line, then the bytes in base64. */
export type ModelFileSection =
  | { readonly status: "file"; readonly bytes: Buffer; readonly size: number; readonly remoteSha256: string | null }
  | { readonly status: "missing" | "notafile" | "unreadable" | "skipped" | "nobase64" }
  | { readonly status: "toolarge"; readonly size: number };

/** Decodes a `model_*` probe section; throws with the reason when the transfer does not add up. */
export function parseModelFileSection(text: string): ModelFileSection {
  const lines = text.split("\n").map((l) => l.trim());
  const head = lines.find((l) => l !== "") ?? "";
  const [status, a, b] = head.split(/\s+/);
  switch (status) {
    case "missing":
    case "notafile":
    case "unreadable":
    case "skipped":
    case "nobase64":
      return { status };
    case "toolarge":
      return { status, size: Number(a) };
    case "file": {
      const body = lines.slice(lines.indexOf(head) + 1).join("");
      if (!/^[A-Za-z0-9+/=]*$/.test(body)) throw new Error("the file's base64 body is corrupt");
      const bytes = Buffer.from(body, "base64");
      const size = Number(a);
      const remoteSha256 = b && /^[0-9a-f]{64}$/.test(b) ? b : null;
      if (bytes.length !== size) {
        throw new Error(`read ${bytes.length} bytes but the file has ${size}; it changed while being read, run discovery again`);
      }
      const local = createHash("sha256").update(bytes).digest("hex");
      if (remoteSha256 && remoteSha256 !== local) {
        throw new Error(`sha256sum on the host printed ${remoteSha256} but the bytes read hash to ${local}; it changed while being read, run discovery again`);
      }
      return { status, bytes, size, remoteSha256 };
    }
    default:
      throw new Error(`unexpected probe output ${JSON.stringify(head.slice(0, 80))}`);
  }
}
