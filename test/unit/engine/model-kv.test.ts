import { expect } from "chai";
import { createHash } from "node:crypto";
import { modelKvGeometry } from "../../../lib/engine/model-kv";
import { TEST_MODEL_CONFIG } from "../../../sim/engine/testing-model";
import { thrown } from "./helpers";

const SOURCE = { host: "gpu-a", dir: "/models/tiny/" };
const json = (over: Record<string, unknown> = {}) => JSON.stringify({ ...TEST_MODEL_CONFIG, ...over });

describe("model KV geometry from config.json (what no log line carries)", () => {
  it("reads layers, total KV heads and head size, and keeps the exact bytes' sha256", () => {
    const text = json();
    expect(modelKvGeometry(text, "bfloat16", SOURCE)).to.deep.equal({
      dtype: "bfloat16",
      kvLayers: 4,
      numKvHeads: 2,
      headDim: 64,
      configSha256: createHash("sha256").update(text).digest("hex"),
    });
  });

  it("resolves the dtype as vLLM does: the plan's, or for auto the checkpoint's float16, else bfloat16", () => {
    expect(modelKvGeometry(json(), "half", SOURCE).dtype).to.equal("float16");
    expect(modelKvGeometry(json({ torch_dtype: "float16" }), "auto", SOURCE).dtype).to.equal("float16");
    expect(modelKvGeometry(json({ torch_dtype: "float32" }), "auto", SOURCE).dtype).to.equal("bfloat16");
    expect(modelKvGeometry(json({ torch_dtype: undefined }), "auto", SOURCE).dtype).to.equal("bfloat16");
  });

  it("takes a hybrid model's linear-attention layers out of the paged-KV layers, and MLA's one latent head", () => {
    const hybrid = json({ num_hidden_layers: 8, linear_attn_config: { kda_layers: [1, 3, 5], short_conv_kernel_size: 4 } });
    expect(modelKvGeometry(hybrid, "bfloat16", SOURCE).kvLayers).to.equal(5);
    const mla = modelKvGeometry(json({ kv_lora_rank: 512, qk_rope_head_dim: 64 }), "bfloat16", SOURCE);
    expect(mla).to.include({ numKvHeads: 1, headDim: 576 });
    expect(mla.mla).to.deep.equal({ kvLoraRank: 512, qkRopeHeadDim: 64 });
  });

  it("refuses a config without the geometry, naming the host and the file", () => {
    const err = thrown(() => modelKvGeometry(json({ num_hidden_layers: undefined, hidden_size: undefined, num_attention_heads: undefined, num_key_value_heads: undefined }), "auto", SOURCE));
    expect([err.code, err.message]).to.deep.equal([
      "NARWHAL_CACHE_LAYOUT_SOURCE",
      "host gpu-a: /models/tiny/config.json has no num_hidden_layers, num_key_value_heads (or num_attention_heads), head_dim (or hidden_size and num_attention_heads), so the cache geometry cannot be computed; check the checkpoint",
    ]);
    const bad = thrown(() => modelKvGeometry("{not json", "auto", SOURCE));
    expect(bad.code).to.equal("NARWHAL_CACHE_LAYOUT_SOURCE");
    expect(bad.message).to.match(/^host gpu-a: \/models\/tiny\/config\.json is not valid JSON/);
  });
});
