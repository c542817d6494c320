import { expect } from "chai";
import { createHash } from "node:crypto";
import { ModelConfigError, modelRequirements, parseModelFileSection } from "../../../lib/discovery/model";
import { TINY_LLAMA_CONFIG } from "../../../sim/hosts";

const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
const sha = (b: string | Buffer) => createHash("sha256").update(b).digest("hex");

/** Kimi-Linear-style hybrid: KDA layers with a short convolution, MLA full-attention layers, custom code. */
const KIMI_LINEAR = {
  architectures: ["KimiLinearForCausalLM"],
  auto_map: {
    AutoConfig: "configuration_kimi.KimiLinearConfig",
    AutoModel: "modeling_kimi.KimiLinearModel",
    AutoModelForCausalLM: "modeling_kimi.KimiLinearForCausalLM",
  },
  model_type: "kimi_linear",
  hidden_size: 2304,
  num_hidden_layers: 27,
  num_attention_heads: 32,
  num_key_value_heads: 32,
  head_dim: 72,
  kv_lora_rank: 512,
  qk_nope_head_dim: 128,
  qk_rope_head_dim: 64,
  v_head_dim: 128,
  mla_use_nope: true,
  max_position_embeddings: 1048576,
  linear_attn_config: {
    full_attn_layers: [4, 8, 12, 16, 20, 24, 27],
    kda_layers: [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23, 25, 26],
    head_dim: 128,
    num_heads: 32,
    short_conv_kernel_size: 4,
  },
  torch_dtype: "bfloat16",
  transformers_version: "4.56.1",
};

/** A multimodal wrapper whose language model is the KDA hybrid: everything lives under text_config. */
const VL_KDA = {
  architectures: ["KimiVLLinearForConditionalGeneration"],
  model_type: "kimi_vl_linear",
  vision_config: { model_type: "moonvit", patch_size: 14, conv_kernel: 3, torch_dtype: "float32" },
  text_config: {
    model_type: "kimi_linear",
    hidden_size: 2048,
    num_hidden_layers: 24,
    num_attention_heads: 16,
    num_key_value_heads: 4,
    max_position_embeddings: 131072,
    torch_dtype: "bfloat16",
    linear_attn_config: { kda_layers: [0, 1, 2, 4, 5, 6], full_attn_layers: [3, 7], short_conv_kernel_size: 4 },
  },
};

const QWEN3_NEXT = {
  architectures: ["Qwen3NextForCausalLM"],
  model_type: "qwen3_next",
  hidden_size: 2048,
  num_hidden_layers: 48,
  num_attention_heads: 16,
  num_key_value_heads: 2,
  head_dim: 256,
  linear_conv_kernel_dim: 4,
  linear_key_head_dim: 128,
  linear_num_key_heads: 16,
  full_attention_interval: 4,
  max_position_embeddings: 262144,
  torch_dtype: "bfloat16",
};

const JAMBA = {
  architectures: ["JambaForCausalLM"],
  model_type: "jamba",
  hidden_size: 4096,
  num_hidden_layers: 32,
  num_attention_heads: 32,
  num_key_value_heads: 8,
  attn_layer_period: 8,
  mamba_d_conv: 4,
  mamba_d_state: 16,
  max_position_embeddings: 262144,
  torch_dtype: "bfloat16",
};

/** transformers >= 4.56 writes `dtype`; GLM-4 tokenizers ship custom code. */
const GLM4 = {
  architectures: ["ChatGLMModel"],
  auto_map: { AutoConfig: "configuration_chatglm.ChatGLMConfig", AutoModel: "modeling_chatglm.ChatGLMForConditionalGeneration" },
  model_type: "chatglm",
  hidden_size: 4096,
  num_layers: 40,
  num_attention_heads: 32,
  multi_query_attention: true,
  multi_query_group_num: 2,
  kv_channels: 128,
  seq_length: 131072,
  dtype: "bfloat16",
};
const GLM4_TOKENIZER = {
  auto_map: { AutoTokenizer: ["tokenization_chatglm.ChatGLM4Tokenizer", null] },
  tokenizer_class: "ChatGLM4Tokenizer",
  model_max_length: 128000,
  eos_token: "<|endoftext|>",
  chat_template: [{ name: "default", template: "{{ messages }}" }],
};

const GEMMA3 = {
  architectures: ["Gemma3ForConditionalGeneration"],
  model_type: "gemma3",
  torch_dtype: "bfloat16",
  text_config: {
    model_type: "gemma3_text",
    hidden_size: 2560,
    num_hidden_layers: 34,
    num_attention_heads: 8,
    num_key_value_heads: 4,
    head_dim: 256,
    max_position_embeddings: 131072,
  },
  vision_config: { model_type: "siglip_vision_model", hidden_size: 1152, num_hidden_layers: 27 },
};

const DEEPSEEK_V3 = {
  architectures: ["DeepseekV3ForCausalLM"],
  auto_map: { AutoConfig: "configuration_deepseek.DeepseekV3Config", AutoModelForCausalLM: "modeling_deepseek.DeepseekV3ForCausalLM" },
  model_type: "deepseek_v3",
  hidden_size: 7168,
  num_hidden_layers: 61,
  num_attention_heads: 128,
  num_key_value_heads: 128,
  kv_lora_rank: 512,
  qk_rope_head_dim: 64,
  max_position_embeddings: 163840,
  torch_dtype: "bfloat16",
};

const LLAMA_TOKENIZER = {
  add_bos_token: true,
  bos_token: { __type: "AddedToken", content: "<s>", lstrip: false, normalized: false, rstrip: false, single_word: false },
  eos_token: "</s>",
  model_max_length: 1000000000000000019884624838656,
  tokenizer_class: "LlamaTokenizer",
  chat_template: "",
};

describe("discovery: model requirements", () => {
  const table: Array<{
    name: string;
    config: unknown;
    tokenizer?: unknown;
    expect: Partial<ReturnType<typeof modelRequirements>>;
  }> = [
    {
      name: "the simulated tiny-llama",
      config: TINY_LLAMA_CONFIG,
      expect: {
        architecture: "LlamaForCausalLM",
        modelType: "llama",
        dtype: "bfloat16",
        dtypeField: "torch_dtype",
        maxPositionEmbeddings: 32768,
        numHiddenLayers: 16,
        numKvHeads: 8,
        headDim: 64,
        mla: null,
        trustRemoteCode: false,
        trustRemoteCodeReason: null,
        ssmConvStateLayoutDS: false,
        ssmConvStateFields: [],
        tokenizer: null,
      },
    },
    {
      name: "a KDA hybrid with custom code (Kimi Linear)",
      config: KIMI_LINEAR,
      expect: {
        architecture: "KimiLinearForCausalLM",
        dtype: "bfloat16",
        maxPositionEmbeddings: 1048576,
        numHiddenLayers: 27,
        numKvHeads: 1,
        headDim: 576,
        mla: { kvLoraRank: 512, qkRopeHeadDim: 64 },
        trustRemoteCode: true,
        trustRemoteCodeReason: "config.json has auto_map (AutoConfig, AutoModel, AutoModelForCausalLM)",
        ssmConvStateLayoutDS: true,
        ssmConvStateFields: ["linear_attn_config.kda_layers", "linear_attn_config.short_conv_kernel_size"],
      },
    },
    {
      name: "the KDA fields under text_config, and a vision encoder's conv_kernel ignored",
      config: VL_KDA,
      expect: {
        modelType: "kimi_vl_linear",
        dtype: "bfloat16",
        dtypeField: "text_config.torch_dtype",
        maxPositionEmbeddings: 131072,
        maxPositionEmbeddingsField: "text_config.max_position_embeddings",
        numHiddenLayers: 24,
        numKvHeads: 4,
        headDim: 128,
        trustRemoteCode: false,
        ssmConvStateLayoutDS: true,
        ssmConvStateFields: ["text_config.linear_attn_config.kda_layers", "text_config.linear_attn_config.short_conv_kernel_size"],
      },
    },
    {
      name: "gated delta net (Qwen3-Next)",
      config: QWEN3_NEXT,
      expect: { numKvHeads: 2, headDim: 256, ssmConvStateLayoutDS: true, ssmConvStateFields: ["linear_conv_kernel_dim"] },
    },
    {
      name: "Mamba hybrid (Jamba)",
      config: JAMBA,
      expect: { numKvHeads: 8, headDim: 128, ssmConvStateLayoutDS: true, ssmConvStateFields: ["mamba_d_conv"] },
    },
    {
      name: "`dtype` (transformers >= 4.56), seq_length, multi-query groups, auto_map in both files",
      config: GLM4,
      tokenizer: GLM4_TOKENIZER,
      expect: {
        architecture: "ChatGLMModel",
        dtype: "bfloat16",
        dtypeField: "dtype",
        maxPositionEmbeddings: 131072,
        maxPositionEmbeddingsField: "seq_length",
        numHiddenLayers: 40,
        numKvHeads: 2,
        headDim: 128,
        trustRemoteCode: true,
        trustRemoteCodeReason:
          "config.json has auto_map (AutoConfig, AutoModel); tokenizer_config.json has auto_map (AutoTokenizer)",
        ssmConvStateLayoutDS: false,
        tokenizer: { tokenizerClass: "ChatGLM4Tokenizer", modelMaxLength: 128000, bosToken: null, eosToken: "<|endoftext|>", chatTemplate: true },
      },
    },
    {
      name: "multimodal: top-level dtype, context length and geometry from text_config",
      config: GEMMA3,
      expect: {
        dtype: "bfloat16",
        dtypeField: "torch_dtype",
        maxPositionEmbeddings: 131072,
        numHiddenLayers: 34,
        numKvHeads: 4,
        headDim: 256,
        ssmConvStateLayoutDS: false,
      },
    },
    {
      name: "MLA (DeepSeek-V3): one latent head of kv_lora_rank + qk_rope_head_dim",
      config: DEEPSEEK_V3,
      expect: { numKvHeads: 1, headDim: 576, mla: { kvLoraRank: 512, qkRopeHeadDim: 64 }, trustRemoteCode: true },
    },
    {
      name: "no dtype at all, and an unbounded tokenizer with AddedToken specials and an empty template",
      config: { ...TINY_LLAMA_CONFIG, torch_dtype: undefined },
      tokenizer: LLAMA_TOKENIZER,
      expect: {
        dtype: null,
        dtypeField: null,
        tokenizer: { tokenizerClass: "LlamaTokenizer", modelMaxLength: null, bosToken: "<s>", eosToken: "</s>", chatTemplate: false },
      },
    },
    {
      name: "a linear-attention block that lists no KDA layers has no conv state",
      config: { ...TINY_LLAMA_CONFIG, linear_attn_config: { kda_layers: [], full_attn_layers: [0, 1], short_conv_kernel_size: 4 } },
      expect: { ssmConvStateLayoutDS: false, ssmConvStateFields: [] },
    },
    {
      name: "an empty auto_map asks for no custom code",
      config: { ...TINY_LLAMA_CONFIG, auto_map: {} },
      tokenizer: { tokenizer_class: "LlamaTokenizerFast" },
      expect: { trustRemoteCode: false, trustRemoteCodeReason: null },
    },
  ];

  for (const row of table) {
    it(row.name, () => {
      const text = json(row.config);
      const got = modelRequirements(text, row.tokenizer === undefined ? undefined : json(row.tokenizer));
      for (const [k, v] of Object.entries(row.expect)) expect(got[k as keyof typeof got], k).to.deep.equal(v);
      expect(got.configSha256).to.equal(sha(text));
    });
  }

  it("hashes the exact bytes: a reformatted config has another sha256, a BOM still parses", () => {
    const pretty = Buffer.from(json(TINY_LLAMA_CONFIG));
    const compact = Buffer.from(JSON.stringify(TINY_LLAMA_CONFIG));
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), compact]);
    const [a, b, c] = [pretty, compact, bom].map((x) => modelRequirements(x));
    expect(a.configSha256).to.equal(sha(pretty));
    expect(b.configSha256).to.equal(sha(compact)).and.not.equal(a.configSha256);
    expect(c.configSha256).to.equal(sha(bom));
    expect(c.architecture).to.equal("LlamaForCausalLM");
  });

  const errors: Array<[string, string | null, RegExp | string]> = [
    ["missing", null, "host sim2: /models/tiny-llama/config.json is missing; stage the checkpoint there (model.checkpointDir) before discovery"],
    ["truncated", '{"architectures": ["LlamaForCausalLM"], "model_type"', /^host sim2: \/models\/tiny-llama\/config.json is not valid JSON \(.+\); restage the checkpoint$/],
    ["not an object", "[1, 2]", "host sim2: /models/tiny-llama/config.json does not hold a JSON object; restage the checkpoint"],
  ];
  for (const [name, text, message] of errors) {
    it(`refuses a ${name} config.json, naming host and path`, () => {
      let err: unknown;
      try {
        modelRequirements(text, undefined, { host: "sim2", dir: "/models/tiny-llama/" });
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(ModelConfigError);
      if (typeof message === "string") expect((err as Error).message).to.equal(message);
      else expect((err as Error).message).to.match(message);
      expect((err as ModelConfigError).detail).to.match(/^\/models\/tiny-llama\/config.json /);
    });
  }

  it("refuses an invalid tokenizer_config.json by name", () => {
    expect(() => modelRequirements(json(TINY_LLAMA_CONFIG), "{", { host: "sim1", dir: "/m" })).to.throw(/^host sim1: \/m\/tokenizer_config.json is not valid JSON/);
  });
});

describe("discovery: checkpoint file sections", () => {
  const config = json(TINY_LLAMA_CONFIG);
  const b64 = Buffer.from(config).toString("base64").replace(/.{76}/g, "$&\n");

  it("decodes the exact bytes and checks them against the host's sha256sum", () => {
    const got = parseModelFileSection(`file ${Buffer.byteLength(config)} ${sha(config)}\n${b64}\n\n`);
    expect(got.status).to.equal("file");
    if (got.status === "file") {
      expect(got.bytes.toString()).to.equal(config);
      expect(got.remoteSha256).to.equal(sha(config));
    }
  });

  it("accepts a host without sha256sum", () => {
    expect(parseModelFileSection(`file ${Buffer.byteLength(config)} -\n${b64}\n`)).to.include({ status: "file", remoteSha256: null });
  });

  const table: Array<[string, string, unknown]> = [
    ["missing", "missing\n", { status: "missing" }],
    ["not a file", "notafile\n", { status: "notafile" }],
    ["too large", "toolarge 9999999\n", { status: "toolarge", size: 9999999 }],
    ["no base64", "nobase64\n", { status: "nobase64" }],
  ];
  for (const [name, text, want] of table) it(name, () => expect(parseModelFileSection(text)).to.deep.equal(want));

  it("notices a file that changed while it was read", () => {
    expect(() => parseModelFileSection(`file ${Buffer.byteLength(config) + 1} -\n${b64}\n`)).to.throw(/it changed while being read/);
    expect(() => parseModelFileSection(`file ${Buffer.byteLength(config)} ${"0".repeat(64)}\n${b64}\n`)).to.throw(/sha256sum on the host printed 0{64}/);
  });

  it("refuses output it does not know", () => {
    expect(() => parseModelFileSection("sh: 1: wc: not found\n")).to.throw('unexpected probe output "sh: 1: wc: not found"');
  });
});
