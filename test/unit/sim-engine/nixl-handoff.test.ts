import { expect } from "chai";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { http, KV_BOTH, makeModel, removeTemps, type SimEngine, sseEvents, startEngine, stopAll, tempDir, waitFor } from "./helpers";
import { nixlMetadata } from "../../../sim/hosts/python-site";

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
});

/** Sets the NIXL model's test knobs on an engine's control port (sim/engine/control.ts, POST /nixl). */
async function nixlKnobs(engine: SimEngine, knobs: { endpoint_timeout_s?: number; nixl_version?: string }): Promise<Record<string, any>> {
  const r = await http(`${engine.controlUrl}/nixl`, { body: knobs });
  expect(r.status, r.text).to.equal(200);
  return r.json;
}

async function remoteEngines(engine: SimEngine): Promise<Array<{ engine_id: string; endpoint: string }>> {
  return (await http(`${engine.controlUrl}/nixl`)).json.remote_engines;
}

/** The engine id a simulator logs at startup (`Initializing NIXL worker <engine_id>`). */
function engineIdOf(engine: SimEngine): string {
  return /Initializing NIXL worker (\S+)/.exec(engine.stdout)![1];
}

const count = (text: string, needle: string) => text.split(needle).length - 1;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A decode leg that may not get an answer at all (the engine crashed under it). */
const decodeOrError = (engine: SimEngine, kv: unknown) => decode(engine, kv).catch((err: Error) => err);

describe("sim-engine NIXL peers across a restart (vLLM 0.29.0 keyed by engine_id; NIXL #49238)", function () {
  this.timeout(60000);
  let model: string;

  before(() => (model = makeModel()));
  afterEach(stopAll);
  after(removeTemps);

  /** Stops `engine` and starts another on its ports with `args`: a restart on the same host:port. */
  async function restart(engine: SimEngine, args: string[]): Promise<SimEngine> {
    await engine.stop();
    return startEngine({ model, port: engine.port, sidePort: engine.sidePort, args });
  }

  it("takes the UCX endpoint timeout from the host's sim config, and the control port overrides it", async () => {
    const args = ["--kv-transfer-config", kvConfig()];
    const engine = await startEngine({ model, args, sim: { timeScale: 0.05, nixl: { endpointTimeoutS: 7 } } });
    expect((await http(`${engine.controlUrl}/nixl`)).json.endpoint_timeout_s).to.equal(7);
    expect((await nixlKnobs(engine, { endpoint_timeout_s: 3 })).endpoint_timeout_s).to.equal(3);
    const plain = await startEngine({ model, args });
    expect((await http(`${plain.controlUrl}/nixl`)).json.endpoint_timeout_s).to.equal(180);
  });

  it("a producer restarted with a new engine_id is handshaken again; the old id's entry stays behind; its in-flight handoff fails its read", async () => {
    const args = ["--kv-transfer-config", kvConfig()];
    let producer = await startEngine({ model, args });
    const consumer = await startEngine({ model, args });
    await nixlKnobs(consumer, { endpoint_timeout_s: 1e6 });
    expect((await decode(consumer, await prefill(producer))).status).to.equal(200);
    const unread = await prefill(producer);
    const oldId = engineIdOf(producer);

    producer = await restart(producer, args);
    const newId = engineIdOf(producer);
    expect(newId).to.match(/^[0-9a-f-]{36}$/).and.not.equal(oldId);
    const kv = await prefill(producer);
    expect(kv).to.include({ remote_engine_id: newId, remote_port: producer.sidePort });
    const r = await decode(consumer, kv);
    expect(r.status, r.text).to.equal(200);
    // One handshake per remote engine id: the new one logs its own compatibility check and transfer plan.
    expect(count(consumer.stdout, "NIXL compatibility check passed")).to.equal(2);
    expect(count(consumer.stdout, "Transfer plan: TransferTopology(")).to.equal(2);
    // The old id's entry is leaked, not an error: its endpoint saw the process go.
    expect((await remoteEngines(consumer)).map((e) => [e.engine_id, e.endpoint])).to.deep.equal([[oldId, "peer gone"], [newId, "connected"]]);
    // Prefilled by the old process, read after the restart with the old id known: the read reaches a process
    // that is not that agent, and the request fails as a failed KV load.
    const lost = await decode(consumer, unread);
    expect(lost.status).to.equal(500);
    expect(lost.json.error.message).to.match(new RegExp(`NIXL read of request \\S+ failed: remote agent \\S+ of engine ${oldId} is gone`));
    expect(consumer.stdout).to.contain("NIXL transfer failure: transfer_failed.");
    expect((await decode(consumer, await prefill(producer))).status).to.equal(200);
  });

  it("with --shutdown-timeout, a stopping producer answers new requests as aborted and keeps running until its held blocks are read; without, the read fails", async () => {
    const args = ["--kv-transfer-config", kvConfig()];
    const draining = await startEngine({ model, args: [...args, "--shutdown-timeout", "30"] });
    const aborting = await startEngine({ model, args });
    const consumer = await startEngine({ model, args });
    const [held, lost] = [await prefill(draining), await prefill(aborting)];

    draining.proc.kill("SIGTERM");
    await waitFor(() => draining.stdout.includes("draining in-flight requests count=1 timeout=30s"), "the producer's drain line");
    const refused = await http(draining.url + "/v1/completions", { body: { prompt: PROMPT, max_tokens: 4 } });
    expect(refused.status, refused.text).to.equal(200);
    expect(refused.json.choices[0]).to.include({ text: "", finish_reason: "abort" });
    const read = await decode(consumer, held);
    expect(read.status, read.text).to.equal(200);
    expect(await draining.exited).to.equal(0);
    expect(draining.stdout).to.contain("[shutdown] API server: stopping engine client mode=drain timeout=30s");
    expect(draining.stdout.indexOf("request processing complete")).to.be.greaterThan(draining.stdout.indexOf("draining in-flight"));

    expect(await aborting.stop()).to.equal(0);
    expect(aborting.stdout).to.contain("stopping engine client mode=abort timeout=0s");
    expect((await decode(consumer, lost)).status).to.equal(500);
  });

  it("a draining producer whose blocks nobody reads is stopped once --shutdown-timeout passes", async () => {
    const producer = await startEngine({ model, args: ["--kv-transfer-config", kvConfig(), "--shutdown-timeout", "1"] });
    await prefill(producer);
    producer.proc.kill("SIGTERM");
    expect(await producer.exited).to.equal(0);
    expect(producer.stdout).to.contain("[shutdown] Process manager: force killing remaining processes count=1");
  });

  it("a handoff prefilled by the old process and read by an engine that never met it fails the handshake with vLLM's engine ID mismatch (case C)", async () => {
    const args = ["--kv-transfer-config", kvConfig()];
    let producer = await startEngine({ model, args });
    const unread = await prefill(producer);
    const oldId = engineIdOf(producer);
    producer = await restart(producer, args);
    const consumer = await startEngine({ model, args });
    const r = await decode(consumer, unread);
    expect(r.status).to.equal(500);
    expect(r.json.error.message).to.equal(`Internal server error: KV load failed (handshake_failed): RuntimeError: Remote NIXL agent engine ID mismatch. Expected ${oldId},received ${engineIdOf(producer)}.`);
    expect(consumer.stdout).to.contain("NIXL transfer failure: handshake_failed.");
    // Nothing was kept for either id: the next handoff from the new process handshakes and works.
    expect(await remoteEngines(consumer)).to.deep.equal([]);
    expect((await decode(consumer, await prefill(producer))).status).to.equal(200);
  });

  it("a producer restarted with a pinned engine_id is never handshaken again: reads go to the dead agent until the consumer restarts (case B)", async () => {
    const pinned = ["--kv-transfer-config", kvConfig({ engine_id: "prefill-pinned" })];
    let producer = await startEngine({ model, args: pinned });
    let consumer = await startEngine({ model, args: ["--kv-transfer-config", kvConfig()] });
    await nixlKnobs(consumer, { endpoint_timeout_s: 1e6 });
    expect((await decode(consumer, await prefill(producer))).status).to.equal(200);
    producer = await restart(producer, pinned);
    for (let i = 0; i < 2; i++) {
      const r = await decode(consumer, await prefill(producer));
      expect(r.status).to.equal(500);
      expect(r.json.error.message).to.match(/NIXL read of request \S+ failed: remote agent \S+ of engine prefill-pinned is gone \(the process at this address now runs agent \S+ of engine prefill-pinned\)/);
    }
    expect(count(consumer.stdout, "Transfer plan: TransferTopology(")).to.equal(1);
    consumer = await restart(consumer, ["--kv-transfer-config", kvConfig()]);
    expect((await decode(consumer, await prefill(producer))).status).to.equal(200);
  });

  it("with the image's NIXL 0.7.1, the first handshake after an endpoint to a gone producer failed segfaults a worker and the engine exits (#49238)", async () => {
    const args = ["--kv-transfer-config", kvConfig()];
    let producer = await startEngine({ model, args });
    const consumer = await startEngine({ model, args });
    expect(await nixlKnobs(consumer, { endpoint_timeout_s: 2 })).to.include({ distribution: "nixl", declared_version: "0.7.1", version: "0.7.1", rkey_unpack_fix: false });
    expect((await decode(consumer, await prefill(producer))).status).to.equal(200);
    producer = await restart(producer, args);
    // 2 simulated seconds at time scale 0.05: the endpoint fails 100 ms after the old producer exited.
    await sleep(300);
    expect((await remoteEngines(consumer)).map((e) => e.endpoint)).to.deep.equal(["failed"]);
    const r = await decodeOrError(consumer, await prefill(producer));
    expect(r).to.be.instanceOf(Error);
    expect(await consumer.exited).to.equal(1);
    expect(consumer.stderr).to.contain("Caught signal 11 (Segmentation fault: address not mapped to object) in ucp_ep_rkey_unpack during nixlAgent::loadRemoteMD");
    expect(consumer.stderr).to.contain("nixl 0.7.1 lacks ai-dynamo/nixl PR #1987 (vLLM #49238)");
    expect(consumer.stderr).to.contain("Fatal Python error: Segmentation fault");
    expect(consumer.stdout).to.match(/\(APIServer pid=\d+\) ERROR .* Engine core proc EngineCore_DP0 died unexpectedly, shutting down client\./);
  });

  it("with a NIXL that has the fix (1.5.0 on), that handshake fails with NIXL_ERR_REMOTE_DISCONNECT instead, the engine survives, and the next handshake works", async () => {
    const args = ["--kv-transfer-config", kvConfig()];
    let producer = await startEngine({ model, args });
    const consumer = await startEngine({ model, args });
    await nixlKnobs(consumer, { endpoint_timeout_s: 2, nixl_version: "1.5.0" });
    expect((await decode(consumer, await prefill(producer))).status).to.equal(200);
    producer = await restart(producer, args);
    await sleep(300);
    const r = await decode(consumer, await prefill(producer));
    expect(r.status).to.equal(500);
    expect(r.json.error.message).to.match(/^Internal server error: KV load failed \(handshake_failed\): nixl\._bindings\.nixlRemoteDisconnectError: NIXL_ERR_REMOTE_DISCONNECT \(loadRemoteMD of agent/);
    expect(consumer.proc.exitCode).to.equal(null);
    expect((await remoteEngines(consumer)).map((e) => e.endpoint)).to.deep.equal(["torn down"]);
    expect((await decode(consumer, await prefill(producer))).status).to.equal(200);
    expect(consumer.stderr).to.not.contain("Segmentation fault");
  });

  it("follows the release a host declares: its sim config names the host's own site, searched before sim/python", async () => {
    const site = tempDir("nixl-site-");
    mkdirSync(join(site, "nixl-1.5.0.dist-info"));
    writeFileSync(join(site, "nixl-1.5.0.dist-info", "METADATA"), nixlMetadata("1.5.0"));
    const engine = await startEngine({ model, args: ["--kv-transfer-config", kvConfig()], sim: { nixl: { site } } });
    expect(await nixlKnobs(engine, {})).to.include({ distribution: "nixl", declared_version: "1.5.0", version: "1.5.0", rkey_unpack_fix: true });
  });

  it("engine_ttl eviction runs before the handshake loads the new agent, so an evicted dead peer cannot crash it", async () => {
    const args = ["--kv-transfer-config", kvConfig({}, { engine_ttl: 1 })];
    let producer = await startEngine({ model, args });
    const consumer = await startEngine({ model, args });
    await nixlKnobs(consumer, { endpoint_timeout_s: 2 });
    expect((await decode(consumer, await prefill(producer))).status).to.equal(200);
    const oldId = engineIdOf(producer);
    producer = await restart(producer, args);
    await sleep(300);
    const r = await decode(consumer, await prefill(producer));
    expect(r.status, r.text).to.equal(200);
    expect(consumer.stdout).to.match(new RegExp(`Evicted stale remote engine ${oldId} \\(inactive for \\d+\\.\\ds\\)\\.`));
    expect((await remoteEngines(consumer)).map((e) => e.engine_id)).to.deep.equal([engineIdOf(producer)]);
  });
});
