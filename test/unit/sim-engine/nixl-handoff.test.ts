import { expect } from "chai";
import { http, KV_BOTH, makeModel, removeTemps, type SimEngine, sseEvents, startEngine, stopAll } from "./helpers";

const PROMPT = "The sea is calm and the gulls are loud. ".repeat(8);

function kvConfig(extra: Record<string, unknown> = {}, connectorExtra: Record<string, unknown> = {}): string {
  return JSON.stringify({ kv_connector: "NixlConnector", kv_role: "kv_both", ...extra, kv_connector_extra_config: { backends: ["UCX"], ...connectorExtra } });
}

/** The toy proxy's prefill leg. */
async function prefill(engine: SimEngine): Promise<Record<string, unknown>> {
  const r = await http(engine.url + "/v1/completions", {
    body: {
      prompt: PROMPT,
      max_tokens: 1,
      stream: false,
      temperature: 0,
      kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false, remote_engine_id: null, remote_block_ids: null, remote_host: null, remote_port: null },
    },
  });
  expect(r.status, r.text).to.equal(200);
  return r.json.kv_transfer_params;
}

/** The toy proxy's decode leg (non-stream, for easy assertions). */
function decode(engine: SimEngine, kv: unknown, extra: Record<string, unknown> = {}) {
  return http(engine.url + "/v1/completions", { body: { prompt: PROMPT, max_tokens: 6, temperature: 0, kv_transfer_params: kv, ...extra } });
}

async function metric(engine: SimEngine, name: string): Promise<number> {
  const text = (await http(engine.url + "/metrics")).text;
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text);
  if (!m) throw new Error(`metric ${name} not found`);
  return Number(m[1]);
}

describe("sim-engine NIXL handoff between engine processes", function () {
  this.timeout(60000);
  let model: string;
  let producer: SimEngine;
  let consumer: SimEngine;

  before(async () => {
    model = makeModel();
    [producer, consumer] = await Promise.all([
      startEngine({ model, args: ["--kv-transfer-config", kvConfig({ engine_id: "prefill-0" })] }),
      startEngine({ model, args: ["--kv-transfer-config", kvConfig({ engine_id: "decode-0" })] }),
    ]);
  });
  after(async () => {
    await stopAll();
    removeTemps();
  });

  it("prefill leg returns the full handoff and holds the blocks; decode leg pulls them, then decodes", async () => {
    const kv = await prefill(producer);
    expect(kv).to.include({ do_remote_prefill: true, do_remote_decode: false, remote_engine_id: "prefill-0", remote_host: "127.0.0.1", remote_port: producer.sidePort, tp_size: 1 });
    expect(kv.remote_request_id).to.be.a("string");
    const blocks = (kv.remote_block_ids as number[][])[0];
    expect(kv.remote_num_tokens).to.equal(82);
    expect(blocks).to.have.length(Math.ceil(82 / 16));
    expect(kv.remote_blocks_expiry_time).to.be.within(Date.now() / 1000, Date.now() / 1000 + 30);
    expect(await metric(producer, "vllm:kv_cache_usage_perc")).to.be.greaterThan(0);

    const local = await http(consumer.url + "/v1/completions", { body: { prompt: PROMPT, max_tokens: 6, temperature: 0 } });
    const r = await decode(consumer, kv);
    expect(r.status, r.text).to.equal(200);
    expect(r.json.kv_transfer_params).to.equal(null);
    expect(r.json.choices[0].text).to.equal(local.json.choices[0].text);
    expect(r.json.usage).to.include({ prompt_tokens: 82, completion_tokens: 6 });
    expect(await metric(consumer, "vllm:nixl_xfer_time_seconds_count")).to.equal(1);
    expect(await metric(consumer, "vllm:nixl_bytes_transferred_sum")).to.equal(blocks.length * 16 * 512 * 4);
    // The producer frees the blocks once they have been read.
    expect(await metric(producer, "vllm:kv_cache_usage_perc")).to.equal(0);
    const again = await decode(consumer, kv);
    expect(again.status).to.equal(500);
    expect(again.json.error.message).to.contain("were already read and freed");
  });

  it("a fresh consumer rejects a handoff naming another engine id (handshake engine-id check)", async () => {
    const fresh = await startEngine({ model, args: ["--kv-transfer-config", KV_BOTH] });
    const kv = { ...(await prefill(producer)), remote_engine_id: "no-such-engine" };
    const r = await decode(fresh, kv);
    expect(r.status).to.equal(500);
    expect(r.json.error.type).to.equal("InternalServerError");
    expect(r.json.error.message).to.contain("Remote NIXL agent engine ID mismatch. Expected no-such-engine,received prefill-0.");
  });

  it("streams the decode leg, and reports a failed pull mid-stream as an error event before [DONE]", async () => {
    const kv = await prefill(producer);
    const ok = await decode(consumer, kv, { stream: true, stream_options: {} });
    const events = sseEvents(ok.text) as any[];
    expect(events.at(-1)).to.equal("[DONE]");
    expect(events.at(-2).usage.completion_tokens).to.equal(6);
    const bad = await decode(consumer, { ...kv, remote_request_id: "cmpl-unknown-0" }, { stream: true });
    const badEvents = sseEvents(bad.text) as any[];
    expect(badEvents[0].error).to.include({ type: "InternalServerError", code: 500 });
    expect(badEvents[0].error.message).to.contain("no KV blocks are held for request cmpl-unknown-0 (unknown request)");
    expect(badEvents.at(-1)).to.equal("[DONE]");
  });

  it("fails an unknown handoff with kv_load_failure_policy=fail", async () => {
    const kv = await prefill(producer);
    const r = await decode(consumer, { ...kv, remote_request_id: "cmpl-nope-0" });
    expect(r.status).to.equal(500);
    expect(r.json.error.message).to.equal(
      "Internal server error: KV load failed (transfer_failed): no KV blocks are held for request cmpl-nope-0 (unknown request)",
    );
    expect(await metric(consumer, "vllm:nixl_num_failed_transfers_total")).to.be.at.least(1);
    expect(consumer.stdout).to.contain("NIXL transfer failure: transfer_failed.");
  });

  it("fails a handoff whose lease expired (kv_lease_duration scaled by timeScale)", async () => {
    const shortLease = await startEngine({ model, args: ["--kv-transfer-config", kvConfig({}, { kv_lease_duration: 1 })] });
    const kv = await prefill(shortLease);
    await new Promise((r) => setTimeout(r, 300)); // the lease is 1 s × 0.05 = 50 ms
    const r = await decode(consumer, kv);
    expect(r.status).to.equal(500);
    expect(r.json.error.message).to.contain("expired: the lease of 1 s ran out before the decode read them");
    expect(shortLease.stdout).to.contain("Releasing expired KV blocks for request");
    expect(await metric(shortLease, "vllm:kv_cache_usage_perc")).to.equal(0);
  });

  it("fails the handshake with an incompatible engine (different --dtype)", async () => {
    const fp16 = await startEngine({ model, args: ["--dtype", "float16", "--kv-transfer-config", KV_BOTH] });
    const r = await decode(consumer, await prefill(fp16));
    expect(r.status).to.equal(500);
    expect(r.json.error.message).to.contain("RuntimeError: NIXL compatibility hash mismatch. Local: ");
    expect(r.json.error.message).to.contain(`"enforce_handshake_compat": false`);
  });

  it("recomputes locally with kv_load_failure_policy=recompute", async () => {
    const recompute = await startEngine({ model, args: ["--kv-transfer-config", kvConfig({ kv_load_failure_policy: "recompute" })] });
    const kv = await prefill(producer);
    const r = await decode(recompute, { ...kv, remote_request_id: "cmpl-nope-0" });
    expect(r.status).to.equal(200);
    expect(r.json.usage.completion_tokens).to.equal(6);
    expect(await metric(recompute, "vllm:nixl_num_failed_transfers_total")).to.equal(1);
    expect(recompute.stdout).to.contain("kv_load_failure_policy=recompute");
  });

  it("ignores kv_transfer_params without --kv-transfer-config", async () => {
    const plain = await startEngine({ model });
    const pre = await http(plain.url + "/v1/completions", { body: { prompt: PROMPT, max_tokens: 1, kv_transfer_params: { do_remote_decode: true } } });
    expect(pre.json.kv_transfer_params).to.equal(null);
    expect(pre.json.choices[0]).to.not.have.property("kv_transfer_params");
    const dec = await decode(plain, { do_remote_prefill: true, remote_engine_id: "x", remote_host: "127.0.0.1", remote_port: 1, remote_block_ids: [[1]] });
    expect(dec.status).to.equal(200);
  });

  it("after a producer restart on the same host:port, the consumer fails with a stale handshake until it restarts (vLLM #38840)", async () => {
    const ports = { port: producer.port, sidePort: producer.sidePort };
    await producer.stop();
    const restarted = await startEngine({ model, ...ports, args: ["--kv-transfer-config", kvConfig({ engine_id: "prefill-1" })] });
    const kv = await prefill(restarted);
    const stale = await decode(consumer, kv);
    expect(stale.status).to.equal(500);
    expect(stale.json.error.message).to.contain(
      `AssertionError: stale NIXL handshake for tcp://127.0.0.1:${ports.sidePort}: metadata cached for engine prefill-0, but the handoff names engine prefill-1`,
    );
    expect((await decode(consumer, await prefill(restarted))).status).to.equal(500);

    const consumerPorts = { port: consumer.port, sidePort: consumer.sidePort };
    await consumer.stop();
    const freshConsumer = await startEngine({ model, ...consumerPorts, args: ["--kv-transfer-config", kvConfig({ engine_id: "decode-1" })] });
    const r = await decode(freshConsumer, await prefill(restarted));
    expect(r.status, r.text).to.equal(200);
  });
});
