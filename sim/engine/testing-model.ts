/**
 * Writes a small HF-style model directory (config.json, tokenizer.json, tokenizer_config.json) that the
 * engine simulator can serve. For tests and fixtures; the host harness may write its own.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface TestModelOptions {
  /** Fields merged over the default config.json (a small Llama-style model). */
  config?: Record<string, unknown>;
  /** Write tokenizer files (default true). */
  tokenizer?: boolean;
}

/** A small Llama-style config: 4 layers, 8 heads, 2 KV heads, head_dim 64, context 4096. */
export const TEST_MODEL_CONFIG = {
  architectures: ["LlamaForCausalLM"],
  model_type: "llama",
  hidden_size: 512,
  intermediate_size: 1376,
  num_hidden_layers: 4,
  num_attention_heads: 8,
  num_key_value_heads: 2,
  max_position_embeddings: 4096,
  torch_dtype: "bfloat16",
  vocab_size: 32000,
  tie_word_embeddings: false,
  bos_token_id: 1,
  eos_token_id: 2,
};

export function writeTestModel(dir: string, options: TestModelOptions = {}): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "config.json"), JSON.stringify({ ...TEST_MODEL_CONFIG, ...options.config }, null, 2));
  if (options.tokenizer !== false) {
    writeFileSync(
      join(dir, "tokenizer.json"),
      JSON.stringify({
        version: "1.0",
        added_tokens: [
          { id: 0, content: "<unk>", special: true },
          { id: 1, content: "<s>", special: true },
          { id: 2, content: "</s>", special: true },
        ],
        model: { type: "BPE", vocab: {}, merges: [] },
      }),
    );
    writeFileSync(
      join(dir, "tokenizer_config.json"),
      JSON.stringify({ bos_token: "<s>", eos_token: "</s>", add_bos_token: true, model_max_length: 4096, tokenizer_class: "LlamaTokenizerFast" }),
    );
  }
  return dir;
}
