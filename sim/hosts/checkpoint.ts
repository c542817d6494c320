/**
 * A small Llama-like checkpoint, the same bytes on every host, written where each host sees it at
 * /models/tiny-llama. Exported so tests and benches can write variants (auto_map, conv-SSM fields, a
 * changed shard on one replica) with the same function.
 *
 * The two shards are well-formed safetensors files (8-byte header length, JSON header, BF16 data) whose
 * data is a deterministic byte stream (AES-CTR keyed by seed and tensor name), so hashes are stable.
 */
import { createCipheriv, createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

export const DEFAULT_CHECKPOINT_SEED = "narwhal-sim-tiny-llama";
/** Bytes of tensor data per shard; a few MiB keeps hashing meaningful and `up` fast. */
export const DEFAULT_SHARD_BYTES = 4 * 1024 * 1024;

export const TINY_LLAMA_CONFIG: Readonly<Record<string, unknown>> = {
  architectures: ["LlamaForCausalLM"],
  model_type: "llama",
  hidden_size: 2048,
  intermediate_size: 5632,
  num_hidden_layers: 16,
  num_attention_heads: 32,
  num_key_value_heads: 8,
  head_dim: 64,
  max_position_embeddings: 32768,
  rms_norm_eps: 1e-5,
  rope_theta: 500000.0,
  hidden_act: "silu",
  attention_bias: false,
  tie_word_embeddings: false,
  torch_dtype: "bfloat16",
  vocab_size: 32000,
  bos_token_id: 1,
  eos_token_id: 2,
  transformers_version: "4.57.1",
};

export interface CheckpointOptions {
  /** Merged over TINY_LLAMA_CONFIG at the top level; a key set to `null` is removed. */
  config?: Record<string, unknown>;
  /** Bytes of tensor data per shard (rounded down to whole BF16 rows of hidden_size). */
  shardBytes?: number;
  /** Changes the shard bytes (e.g. a different seed for one replica); defaults to DEFAULT_CHECKPOINT_SEED. */
  seed?: string;
  /** More files to write (e.g. `modeling_tiny.py` for an auto_map variant); a path may contain `/`. */
  extraFiles?: Record<string, string | Buffer>;
}

export interface CheckpointFile {
  /** Path relative to the checkpoint directory. */
  path: string;
  bytes: number;
  sha256: string;
}

/** Replaces `dir` with a fresh checkpoint and returns its files, sorted by path (code point order). */
export function writeCheckpoint(dir: string, opts: CheckpointOptions = {}): CheckpointFile[] {
  const config: Record<string, unknown> = { ...TINY_LLAMA_CONFIG };
  for (const [k, v] of Object.entries(opts.config ?? {})) {
    if (v === null) delete config[k];
    else config[k] = v;
  }
  const hidden = typeof config.hidden_size === "number" ? config.hidden_size : 2048;
  const rows = Math.max(1, Math.floor((opts.shardBytes ?? DEFAULT_SHARD_BYTES) / (hidden * 2)));
  const seed = opts.seed ?? DEFAULT_CHECKPOINT_SEED;

  const files = new Map<string, string | Buffer>();
  const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
  files.set("config.json", json(config));
  files.set("generation_config.json", json(generationConfig()));
  files.set("tokenizer.json", json(tokenizerJson()));
  files.set("tokenizer_config.json", json(tokenizerConfig(Number(config.max_position_embeddings ?? 32768))));
  files.set("README.md", "# tiny-llama (simulated)\n\nA made-up Llama-shaped checkpoint for narwhal-fleet's simulated hosts.\n");

  const shardNames = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"];
  const shards: Array<Record<string, number[]>> = [
    { "model.embed_tokens.weight": [rows, hidden] },
    { "lm_head.weight": [rows, hidden], "model.norm.weight": [hidden] },
  ];
  const weightMap: Record<string, string> = {};
  let totalSize = 0;
  shards.forEach((tensors, i) => {
    const buf = safetensors(tensors, seed);
    files.set(shardNames[i], buf.file);
    totalSize += buf.dataBytes;
    for (const name of Object.keys(tensors)) weightMap[name] = shardNames[i];
  });
  files.set("model.safetensors.index.json", json({ metadata: { total_size: totalSize }, weight_map: sortKeys(weightMap) }));
  for (const [p, content] of Object.entries(opts.extraFiles ?? {})) files.set(p, content);

  fs.rmSync(dir, { recursive: true, force: true });
  const written: CheckpointFile[] = [];
  for (const [rel, content] of files) {
    const file = path.join(dir, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
    const bytes = typeof content === "string" ? Buffer.byteLength(content) : content.length;
    written.push({ path: rel, bytes, sha256: createHash("sha256").update(content).digest("hex") });
  }
  fs.chmodSync(dir, 0o755);
  return written.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function sortKeys<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** A safetensors file of BF16 tensors with deterministic contents. */
function safetensors(tensors: Record<string, number[]>, seed: string): { file: Buffer; dataBytes: number } {
  const header: Record<string, unknown> = { __metadata__: { format: "pt" } };
  const chunks: Buffer[] = [];
  let offset = 0;
  for (const [name, shape] of Object.entries(tensors)) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 2;
    header[name] = { dtype: "BF16", shape, data_offsets: [offset, offset + bytes] };
    chunks.push(deterministicBytes(`${seed}/${name}`, bytes));
    offset += bytes;
  }
  let headerText = JSON.stringify(header);
  headerText += " ".repeat((8 - (Buffer.byteLength(headerText) % 8)) % 8); // the format pads the header to 8 bytes
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(headerText)));
  return { file: Buffer.concat([len, Buffer.from(headerText), ...chunks]), dataBytes: offset };
}

/** AES-256-CTR keystream keyed by the label: fast, and the same on every machine. */
export function deterministicBytes(label: string, length: number): Buffer {
  const key = createHash("sha256").update(label).digest();
  const cipher = createCipheriv("aes-256-ctr", key, Buffer.alloc(16));
  return Buffer.concat([cipher.update(Buffer.alloc(length)), cipher.final()]);
}

function generationConfig() {
  return { _from_model_config: true, bos_token_id: 1, eos_token_id: 2, do_sample: false, max_length: 32768, transformers_version: "4.57.1" };
}

function tokenizerConfig(maxLen: number) {
  const special = (content: string) => ({
    content,
    lstrip: false,
    normalized: false,
    rstrip: false,
    single_word: false,
    special: true,
  });
  return {
    add_bos_token: true,
    add_eos_token: false,
    added_tokens_decoder: { "0": special("<unk>"), "1": special("<s>"), "2": special("</s>") },
    bos_token: "<s>",
    eos_token: "</s>",
    unk_token: "<unk>",
    pad_token: null,
    clean_up_tokenization_spaces: false,
    legacy: false,
    model_max_length: maxLen,
    tokenizer_class: "LlamaTokenizerFast",
    chat_template:
      "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}" +
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
  };
}

/** GPT-2's byte-to-printable-character table, the alphabet of a byte-level BPE vocabulary. */
function byteLevelAlphabet(): string[] {
  const printable = new Set<number>();
  for (let b = 0x21; b <= 0x7e; b++) printable.add(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.add(b);
  for (let b = 0xae; b <= 0xff; b++) printable.add(b);
  let extra = 0;
  return Array.from({ length: 256 }, (_, b) => String.fromCharCode(printable.has(b) ? b : 256 + extra++));
}

/** A small, well-formed byte-level BPE tokenizer.json: 3 specials, 256 byte symbols, a few merges. */
function tokenizerJson() {
  const specials = ["<unk>", "<s>", "</s>"];
  const merges: Array<[string, string]> = [
    ["Ġ", "t"],
    ["h", "e"],
    ["Ġt", "he"],
    ["i", "n"],
    ["Ġ", "a"],
  ];
  const vocab: Record<string, number> = {};
  for (const tok of [...specials, ...byteLevelAlphabet(), ...merges.map(([a, b]) => a + b)]) {
    if (!(tok in vocab)) vocab[tok] = Object.keys(vocab).length;
  }
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: specials.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: {
      type: "TemplateProcessing",
      single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
      pair: [
        { SpecialToken: { id: "<s>", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "<s>", type_id: 1 } },
        { Sequence: { id: "B", type_id: 1 } },
      ],
      special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } },
    },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: merges.map(([a, b]) => [a, b]),
    },
  };
}
