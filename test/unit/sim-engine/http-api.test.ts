import { expect } from "chai";
import { http, KV_BOTH, makeModel, removeTemps, type SimEngine, sseEvents, startEngine, stopAll } from "./helpers";

describe("sim-engine HTTP API (vLLM 0.29 shapes, one engine process)", function () {
  let engine: SimEngine;
  const auth = { authorization: "Bearer sekret" };
  const post = (path: string, body: unknown, headers: Record<string, string> = auth) => http(engine.url + path, { body, headers });

  before(async () => {
    engine = await startEngine({
      model: makeModel(),
      args: ["--served-model-name", "sim-llama", "alias", "--kv-transfer-config", KV_BOTH, "--max-model-len", "2048", "--enable-server-load-tracking"],
      env: { VLLM_API_KEY: "sekret" },
    });
  });
  after(async () => {
    await stopAll();
    removeTemps();
  });

  it("logs vLLM's cache lines and the NIXL layout line at startup", () => {
    expect(engine.stdout).to.match(/GPU KV cache size: [\d,]+ tokens, Maximum concurrency for 2,048 tokens per request: [\d.]+ x\n/);
    expect(engine.stdout).to.contain("NixlConnector setting KV cache layout to LBHNC for better xfer performance.");
    expect(engine.stdout).to.not.contain("sekret");
  });

  it("GET /health is 200 with an empty body; /version, /load answer without a key", async () => {
    const health = await http(engine.url + "/health");
    expect([health.status, health.text]).to.deep.equal([200, ""]);
    expect((await http(engine.url + "/version")).json).to.deep.equal({ version: "0.29.0" });
    expect((await http(engine.url + "/load")).json).to.deep.equal({ server_load: 0 });
  });

  it("GET /v1/models lists every served name with max_model_len and root", async () => {
    const r = await http(engine.url + "/v1/models", { headers: auth });
    expect(r.status).to.equal(200);
    expect(r.json.object).to.equal("list");
    expect(r.json.data.map((m: { id: string }) => m.id)).to.deep.equal(["sim-llama", "alias"]);
    const card = r.json.data[0];
    expect(card).to.include({ object: "model", owned_by: "vllm", parent: null, max_model_len: 2048 });
    expect(card.root).to.match(/model$/);
    expect(card.permission[0].object).to.equal("model_permission");
  });

  it("guards /v1 with the API key like vLLM 0.29, leaving /health, /version, /metrics, /tokenize, /load open", async () => {
    for (const [path, init] of [
      ["/v1/models", {}],
      ["/v1/models", { headers: { authorization: "Bearer wrong" } }],
      ["/v1/completions", { body: { prompt: "x" } }],
    ] as const) {
      const r = await http(engine.url + path, init);
      expect([r.status, r.json], path).to.deep.equal([401, { error: "Unauthorized" }]);
    }
    expect((await http(engine.url + "/v1/models", { headers: { authorization: "bearer sekret" } })).status).to.equal(200);
    for (const path of ["/health", "/version", "/metrics", "/load"]) expect((await http(engine.url + path)).status, path).to.equal(200);
    expect((await http(engine.url + "/tokenize", { body: { prompt: "hi" } })).status).to.equal(200);
  });

  it("POST /tokenize accepts a prompt or messages and reports count, max_model_len, tokens", async () => {
    const a = await post("/tokenize", { model: "sim-llama", prompt: "The sea is calm." });
    expect(a.json).to.deep.include({ count: 6, max_model_len: 2048, token_strs: null });
    expect(a.json.tokens).to.have.length(6);
    const strs = await post("/tokenize", { prompt: "The sea", return_token_strs: true });
    expect(strs.json.token_strs).to.deep.equal(["<s>", "The", " sea"]);
    const chat = await post("/tokenize", { messages: [{ role: "user", content: "hello" }] });
    expect(chat.json.count).to.equal(chat.json.tokens.length);
    expect(chat.json.count).to.be.greaterThan(3);
  });

  it("POST /v1/completions returns vLLM's non-stream shape, deterministic at temperature 0", async () => {
    const body = { model: "sim-llama", prompt: "The sea is", max_tokens: 8, temperature: 0 };
    const r = await post("/v1/completions", body);
    expect(r.status).to.equal(200);
    expect(r.json).to.include({ object: "text_completion", model: "sim-llama", system_fingerprint: null, kv_transfer_params: null });
    expect(r.json.id).to.match(/^cmpl-/);
    expect(r.json.choices[0]).to.include({ index: 0, logprobs: null, finish_reason: "length", stop_reason: null });
    expect(r.json.usage).to.deep.equal({ prompt_tokens: 4, completion_tokens: 8, total_tokens: 12, prompt_tokens_details: null });
    expect((await post("/v1/completions", body)).json.choices[0].text).to.equal(r.json.choices[0].text);
  });

  it("streams SSE chunks, a usage chunk with choices [] when stream_options is present, then [DONE]", async () => {
    const r = await post("/v1/completions", { model: "alias", prompt: "The sea is", max_tokens: 4, temperature: 0, stream: true, stream_options: {} });
    expect(r.headers.get("content-type")).to.match(/^text\/event-stream/);
    expect(r.text.endsWith("data: [DONE]\n\n")).to.equal(true);
    const events = sseEvents(r.text) as any[];
    expect(events).to.have.length(6);
    const chunks = events.slice(0, 4);
    expect(chunks.map((c) => c.choices[0].finish_reason)).to.deep.equal([null, null, null, "length"]);
    expect(chunks.every((c) => c.object === "text_completion" && c.usage === undefined)).to.equal(true);
    expect(events[4]).to.deep.include({ choices: [], usage: { prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 } });
    const plain = await post("/v1/completions", { model: "alias", prompt: "The sea is", max_tokens: 8, temperature: 0 });
    expect(chunks.map((c) => c.choices[0].text).join("")).to.equal(plain.json.choices[0].text.split(" ").slice(0, 5).join(" "));
  });

  it("omits the usage chunk without stream_options or with include_usage false", async () => {
    for (const extra of [{}, { stream_options: { include_usage: false } }]) {
      const events = sseEvents((await post("/v1/completions", { prompt: "x", max_tokens: 2, stream: true, ...extra })).text) as any[];
      expect(events.length).to.equal(3);
      expect(events.some((e) => e !== "[DONE]" && e.choices.length === 0)).to.equal(false);
    }
  });

  it("serves /v1/chat/completions in both forms", async () => {
    const r = await post("/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 3, temperature: 0 });
    expect(r.json.object).to.equal("chat.completion");
    expect(r.json.choices[0].message.role).to.equal("assistant");
    expect(r.json.usage.completion_tokens).to.equal(3);
    const s = sseEvents((await post("/v1/chat/completions", { messages: [{ role: "user", content: "hi" }], max_tokens: 3, stream: true, stream_options: {} })).text) as any[];
    expect(s[0].choices[0].delta).to.deep.equal({ role: "assistant", content: "" });
    expect(s.at(-2).usage.completion_tokens).to.equal(3);
  });

  it("answers errors in vLLM's {error: {message, type, param, code}} shape", async () => {
    const unknown = await post("/v1/completions", { model: "nope", prompt: "x" });
    expect(unknown.status).to.equal(404);
    expect(unknown.json.error).to.deep.equal({ message: "The model `nope` does not exist.", type: "NotFoundError", param: "model", code: 404 });

    const opts = await post("/v1/completions", { prompt: "x", stream_options: { include_usage: true } });
    expect(opts.status).to.equal(400);
    expect(opts.json.error).to.include({ type: "BadRequestError", code: 400, message: "Stream options can only be defined when `stream=True`." });

    const long = await post("/v1/completions", { prompt: "word ".repeat(3000), max_tokens: 4 });
    expect(long.status).to.equal(400);
    expect(long.json.error.message).to.equal(
      "This model's maximum context length is 2048 tokens. However, your request has 3002 input tokens. Please reduce the length of the input messages.",
    );
    const tooMany = await post("/v1/completions", { prompt: "word ".repeat(2000), max_tokens: 100 });
    expect(tooMany.json.error.message).to.contain("'max_tokens' or 'max_completion_tokens' is too large: 100.");

    expect((await post("/v1/completions", "{oops")).status).to.equal(400);
    expect((await http(engine.url + "/nowhere")).status).to.equal(404);
  });

  it("honours ignore_eos and min_tokens past the model's natural end", async () => {
    const natural = await post("/v1/completions", { prompt: "The sea is", max_tokens: 1000, temperature: 0 });
    expect(natural.json.choices[0].finish_reason).to.equal("stop");
    const n = natural.json.usage.completion_tokens;
    expect(n).to.be.within(65, 513);
    const forced = await post("/v1/completions", { prompt: "The sea is", max_tokens: n + 10, temperature: 0, ignore_eos: true });
    expect(forced.json.choices[0].finish_reason).to.equal("length");
    expect(forced.json.usage.completion_tokens).to.equal(n + 10);
    const min = await post("/v1/completions", { prompt: "The sea is", max_tokens: n + 10, temperature: 0, min_tokens: n + 5 });
    expect(min.json.usage.completion_tokens).to.be.at.least(n + 5);
  });

  it("exposes vLLM metrics with engine/model_name labels and every CacheConfig field", async () => {
    const text = (await http(engine.url + "/metrics")).text;
    expect(text).to.match(/^process_start_time_seconds [0-9.e+]+$/m);
    expect(text).to.match(/^vllm:num_requests_running\{engine="0",model_name="sim-llama"\} 0\.0$/m);
    expect(text).to.match(/^vllm:num_requests_waiting\{engine="0",model_name="sim-llama"\} 0\.0$/m);
    expect(text).to.match(/^vllm:kv_cache_usage_perc\{engine="0",model_name="sim-llama"\} /m);
    for (const name of ["vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds"]) {
      expect(text).to.contain(`${name}_bucket{engine="0",model_name="sim-llama",le="+Inf"}`);
      expect(text).to.match(new RegExp(`^${name}_count\\{[^}]*\\} [1-9]`, "m"));
      expect(text).to.contain(`${name}_sum{`);
    }
    expect(text).to.match(/^vllm:prompt_tokens_total\{[^}]*\} [1-9]/m);
    expect(text).to.match(/^vllm:generation_tokens_total\{[^}]*\} [1-9]/m);
    expect(text).to.contain("vllm:nixl_xfer_time_seconds_count{");
    expect(text).to.contain("vllm:nixl_num_failed_transfers_total{");
    const info = /^vllm:cache_config_info\{(.*)\} 1\.0$/m.exec(text);
    expect(info).to.not.equal(null);
    expect(info![1]).to.contain('block_size="16",gpu_memory_utilization="0.92"');
    expect(info![1]).to.contain('cache_dtype="auto"');
    expect(info![1]).to.contain('enable_prefix_caching="True"');
    expect(info![1]).to.match(/num_gpu_blocks="\d+"/);
    expect(info![1]).to.match(/kv_cache_size_tokens="\d+",kv_cache_max_concurrency="[\d.]+",kv_cache_layout="None",engine="0"$/);
  });

  it("answers /sim/* on the engine port as vLLM's FastAPI does any unknown path: 404 {detail: Not Found}", async () => {
    for (const [path, init] of [
      ["/sim/truth", {}],
      ["/sim/cache-layout", {}],
      ["/sim/dead", { body: { dead: true } }],
      ["/truth", {}],
      ["/dead", { body: { dead: true } }],
    ] as const) {
      const r = await http(engine.url + path, { ...init, headers: { ...auth, "x-narwhal-sim": "1" } });
      expect([r.status, r.json], path).to.deep.equal([404, { detail: "Not Found" }]);
    }
    expect((await http(engine.url + "/health")).status).to.equal(200);
  });

  it("exposes the ground truth and the cache layout on its control port, not the engine's", async () => {
    const truth = (await http(engine.controlUrl + "/truth")).json;
    expect(truth.time_scale).to.equal(0.05);
    expect(truth.pid).to.equal(engine.proc.pid);
    expect(truth.coefficients).to.deep.equal({ prefillA: 2e-8, prefillB: 6e-5, prefillC: 0.005, decodeKv: 3e-6, decodeReq: 0.002, decodeBase: 0.012 });
    expect(truth.effective_coefficients.decodeBase).to.be.closeTo(0.0006, 1e-12);
    const layout = (await http(engine.controlUrl + "/cache-layout")).json;
    expect(layout).to.include({
      dtype: "bfloat16",
      cache_dtype: "auto",
      num_hidden_layers: 4,
      num_kv_heads: 2,
      num_kv_heads_per_rank: 2,
      head_dim: 64,
      tensor_parallel_size: 1,
      block_size: 16,
      kv_cache_layout: "LBHNC",
      attention_backend: "FLASH_ATTN",
      bytes_per_token_per_layer: 512,
      kv_connector: "NixlConnector",
    });
    expect(layout.side_channel).to.deep.equal({ host: "127.0.0.1", port: engine.sidePort });
    expect(layout.compatibility_hash).to.match(/^[0-9a-f]{64}$/);
    const metrics = (await http(engine.url + "/metrics")).text;
    expect(metrics).to.contain(`num_gpu_blocks="${layout.num_gpu_blocks}"`);
    expect(metrics).to.contain(`kv_cache_size_tokens="${layout.kv_cache_size_tokens}"`);
    const unknown = await http(engine.controlUrl + "/sim/truth");
    expect(unknown.status).to.equal(404);
  });

  it("marks the engine dead via the control port's POST /dead or SIGUSR2, without killing it", async () => {
    expect((await http(engine.controlUrl + "/dead", { body: { dead: "yes" } })).status).to.equal(400);
    expect((await http(engine.controlUrl + "/dead", { body: {} })).json).to.deep.equal({ dead: true });
    expect((await http(engine.url + "/health")).status).to.equal(503);
    const refused = await post("/v1/completions", { prompt: "x", max_tokens: 1 });
    expect(refused.status).to.equal(500);
    expect(refused.json.error.type).to.equal("InternalServerError");
    expect((await http(engine.controlUrl + "/dead", { body: { dead: false } })).json).to.deep.equal({ dead: false });
    expect((await http(engine.url + "/health")).status).to.equal(200);
    engine.proc.kill("SIGUSR2");
    await new Promise((r) => setTimeout(r, 200));
    expect((await http(engine.url + "/health")).status).to.equal(503);
    engine.proc.kill("SIGUSR2");
    await new Promise((r) => setTimeout(r, 200));
    expect((await http(engine.url + "/health")).status).to.equal(200);
  });

  it("counts in-flight requests in /load with --enable-server-load-tracking", async () => {
    const pending = post("/v1/completions", { prompt: "x", max_tokens: 200, ignore_eos: true });
    await new Promise((r) => setTimeout(r, 30));
    expect((await http(engine.url + "/load")).json.server_load).to.equal(1);
    await pending;
  });

  it("exits 0 on SIGTERM", async () => {
    expect(await engine.stop()).to.equal(0);
    expect(engine.stdout).to.contain("Shutting down");
  });
});
