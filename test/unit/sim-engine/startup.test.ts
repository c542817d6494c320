import { expect } from "chai";
import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { freePort, KV_BOTH, makeModel, removeTemps, runToExit, spawnEngine, startEngine, stopAll, tempDir } from "./helpers";

function simConfigFile(value: unknown): string {
  const file = join(tempDir(), "sim.json");
  writeFileSync(file, JSON.stringify(value));
  return file;
}

function tcpRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: "127.0.0.1", port });
    s.once("connect", () => {
      s.destroy();
      resolve(false);
    });
    s.once("error", (err: NodeJS.ErrnoException) => resolve(err.code === "ECONNREFUSED"));
  });
}

describe("sim-engine startup", function () {
  afterEach(stopAll);
  after(removeTemps);

  it("prints the configured version for --version", async () => {
    expect((await runToExit(["--version"])).stdout).to.equal("0.29.0\n");
    const r = await runToExit(["--version"], { NARWHAL_SIM_CONFIG: simConfigFile({ version: "0.27.1" }) });
    expect([r.code, r.stdout]).to.deep.equal([0, "0.27.1\n"]);
  });

  it("exits 2 with argparse's message for an unknown flag", async () => {
    const r = await runToExit(["serve", makeModel(), "--no-such-flag", "1"]);
    expect(r.code).to.equal(2);
    expect(r.stderr).to.equal("usage: vllm serve [model_tag] [options]\nvllm serve: error: unrecognized arguments: --no-such-flag 1\n");
  });

  it("refuses a model with auto_map unless --trust-remote-code is given", async () => {
    const model = makeModel({ config: { auto_map: { AutoConfig: "configuration_x.XConfig", AutoModelForCausalLM: "modeling_x.XForCausalLM" } } });
    const r = await runToExit(["serve", model, "--port", String(await freePort())]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain(`ValueError: The repository ${model} contains custom code which must be executed to correctly load the model.`);
    expect(r.stderr).to.contain("`--trust-remote-code`");
    const ok = await startEngine({ model, args: ["--trust-remote-code"] });
    expect(ok.stdout).to.contain("Application startup complete.");
  });

  it("refuses a conv-SSM model unless VLLM_SSM_CONV_STATE_LAYOUT=DS", async () => {
    const model = makeModel({ config: { text_config: { linear_attn_config: { kda_layers: [1, 2], short_conv_kernel_size: 4 } } } });
    const r = await runToExit(["serve", model, "--port", String(await freePort())]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain("AssertionError: 3-read Mamba conv transfer requires DS conv state layout. Set VLLM_SSM_CONV_STATE_LAYOUT=DS");
    const ok = await startEngine({ model, env: { VLLM_SSM_CONV_STATE_LAYOUT: "DS" } });
    const layout = (await (await fetch(ok.controlUrl + "/cache-layout")).json()) as { kv_layers: number; hybrid: unknown };
    expect(layout.kv_layers).to.equal(2);
    expect(layout.hybrid).to.deep.equal({ kda_layers: [1, 2], short_conv_kernel_size: 4 });
  });

  it("refuses --max-model-len above max_position_embeddings like vLLM's ModelConfig", async () => {
    const r = await runToExit(["serve", makeModel(), "--max-model-len", "8192"]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain("User-specified max_model_len (8192) is greater than the derived max_model_len (max_position_embeddings=4096");
  });

  it("mimics ROCm's HIP_VISIBLE_DEVICES handling and checks TP against visible GPUs", async () => {
    const amd = simConfigFile({ gpu: { vendor: "amd", product: "AMD Instinct MI300X", memoryGiB: 192 } });
    const mismatch = await runToExit(["serve", makeModel()], { NARWHAL_SIM_CONFIG: amd, HIP_VISIBLE_DEVICES: "0,1", CUDA_VISIBLE_DEVICES: "2,3" });
    expect(mismatch.code).to.equal(1);
    expect(mismatch.stderr).to.contain("AssertionError: HIP_VISIBLE_DEVICES (0,1) and CUDA_VISIBLE_DEVICES (2,3) are both set and differ");
    const tooFew = await runToExit(["serve", makeModel(), "-tp", "2"], { CUDA_VISIBLE_DEVICES: "3" });
    expect(tooFew.code).to.equal(1);
    expect(tooFew.stderr).to.contain("World size (2) is larger than the number of available GPUs (1)");
    const ok = await startEngine({ model: makeModel(), args: ["-tp", "2"], sim: { gpu: { vendor: "amd", product: "AMD Instinct MI300X", memoryGiB: 192 } }, env: { HIP_VISIBLE_DEVICES: "4,5" } });
    const layout = (await (await fetch(ok.controlUrl + "/cache-layout")).json()) as Record<string, unknown>;
    expect(layout).to.deep.include({ attention_backend: "ROCM_ATTN", visible_devices: ["4", "5"], visibility_env: "HIP_VISIBLE_DEVICES", num_kv_heads_per_rank: 1 });
  });

  it("refuses connections until startup finishes, then answers", async () => {
    // Long enough that a busy machine still probes inside the startup window; readiness ends the wait.
    const engine = await spawnEngine({ model: makeModel(), sim: { startupDelayS: 5, timeScale: 1 } });
    while (!engine.stdout.includes("vLLM API server version") && engine.proc.exitCode === null) await new Promise((r) => setTimeout(r, 50));
    expect(engine.stdout).to.not.contain("Application startup complete.");
    expect(await tcpRefused(engine.port)).to.equal(true);
    await engine.ready();
    expect((await fetch(`${engine.url}/health`)).status).to.equal(200);
  });

  it("exits 0 on SIGTERM even while still starting", async () => {
    const engine = await spawnEngine({ model: makeModel(), args: ["--kv-transfer-config", KV_BOTH], sim: { startupDelayS: 10, timeScale: 1 } });
    while (!engine.stdout.includes("vLLM API server version") && engine.proc.exitCode === null) await new Promise((r) => setTimeout(r, 50));
    expect(await engine.stop()).to.equal(0);
  });

  it("fails to start when the NIXL side-channel port is taken (ZMQ 'Address already in use')", async () => {
    const first = await startEngine({ model: makeModel(), args: ["--kv-transfer-config", KV_BOTH] });
    const second = await spawnEngine({ model: makeModel(), args: ["--kv-transfer-config", KV_BOTH], sidePort: first.sidePort });
    expect(await second.exited).to.equal(1);
    expect(second.stderr).to.contain(`zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:${first.sidePort}')`);
  });

  it("fails to start when the HTTP port is taken", async () => {
    const first = await startEngine({ model: makeModel() });
    const second = await spawnEngine({ model: makeModel(), port: first.port });
    expect(await second.exited).to.equal(1);
    expect(second.stderr).to.contain("address already in use");
  });
});
