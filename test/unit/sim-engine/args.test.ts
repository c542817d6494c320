import { expect } from "chai";
import { describeNonDefault, parseServeArgs } from "../../../sim/engine/args";
import { ArgError } from "../../../sim/engine/errors";

function argError(argv: string[]): ArgError {
  try {
    parseServeArgs(argv);
  } catch (err) {
    if (err instanceof ArgError) return err;
    throw err;
  }
  throw new Error("expected an ArgError");
}

describe("sim-engine args (vllm serve flags)", () => {
  it("applies vLLM's defaults", () => {
    const a = parseServeArgs(["/models/m"]);
    expect(a).to.include({
      model: "/models/m",
      host: null,
      port: 8000,
      tensorParallelSize: 1,
      dtype: "auto",
      kvCacheDtype: "auto",
      blockSize: 16,
      maxModelLen: null,
      maxNumSeqs: null,
      gpuMemoryUtilization: 0.92,
      enforceEager: false,
      enablePrefixCaching: true,
      trustRemoteCode: false,
      apiKey: null,
      kvTransferConfig: null,
    });
    expect(a.servedModelNames).to.deep.equal([]);
  });

  it("accepts --flag value, --flag=value, underscores, -tp and --no- booleans", () => {
    const a = parseServeArgs([
      "/m",
      "--port=8101",
      "--max_model_len",
      "32k",
      "-tp",
      "2",
      "--dtype=float16",
      "--kv-cache-dtype",
      "fp8",
      "--enforce-eager",
      "--no-enable-prefix-caching",
      "--gpu-memory-utilization",
      "0.9",
      "--served-model-name",
      "a",
      "b",
      "--block-size",
      "128",
    ]);
    expect(a).to.include({ port: 8101, maxModelLen: 32000, tensorParallelSize: 2, dtype: "float16", kvCacheDtype: "fp8", enforceEager: true });
    expect(a).to.include({ enablePrefixCaching: false, gpuMemoryUtilization: 0.9, blockSize: 128 });
    expect(a.servedModelNames).to.deep.equal(["a", "b"]);
    expect(parseServeArgs(["/m", "--max-model-len", "32K"]).maxModelLen).to.equal(32768);
  });

  it("rejects unknown flags like argparse (exit 2)", () => {
    const err = argError(["/m", "--port", "1", "--frobnicate", "x"]);
    expect(err.exitCode).to.equal(2);
    expect(err.message).to.equal("unrecognized arguments: --frobnicate x");
  });

  it("rejects bad values with argparse's wording", () => {
    expect(argError(["/m", "--port", "abc"]).message).to.equal("argument --port: invalid int value: 'abc'");
    expect(argError(["/m", "--dtype", "int8"]).message).to.equal(
      "argument --dtype: invalid choice: 'int8' (choose from 'auto', 'half', 'float16', 'bfloat16', 'float', 'float32')",
    );
    expect(argError(["/m", "--port"]).message).to.equal("argument --port: expected one argument");
    expect(argError(["/m", "--enforce-eager=1"]).message).to.equal("argument --enforce-eager: ignored explicit argument '1'");
    expect(argError([]).message).to.contain("the following arguments are required: model_tag");
  });

  it("parses --kv-transfer-config with vLLM's defaults and checks", () => {
    const a = parseServeArgs(["/m", "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both","engine_id":"p1"}']);
    expect(a.kvTransferConfig).to.include({
      kvConnector: "NixlConnector",
      kvRole: "kv_both",
      engineId: "p1",
      kvBufferDevice: "cuda",
      kvLoadFailurePolicy: "fail",
      kvLeaseDurationS: 30,
      enforceHandshakeCompat: true,
      enableCrossLayersBlocks: false,
    });
    const noId = parseServeArgs(["/m", "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}']);
    expect(noId.kvTransferConfig?.engineId).to.match(/^[0-9a-f-]{36}$/);
    expect(argError(["/m", "--kv-transfer-config", '{"kv_connector":"NixlConnector"}']).message).to.equal(
      "argument --kv-transfer-config: Please specify kv_role when kv_connector is set, supported roles are ['kv_producer', 'kv_consumer', 'kv_both']",
    );
    expect(argError(["/m", "--kv-transfer-config", "{not json"]).message).to.contain("cannot be converted to KVTransferConfig");
    expect(argError(["/m", "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both","bogus":1}']).message).to.contain("bogus");
  });

  it("masks the API key in the non-default args line", () => {
    const line = describeNonDefault(parseServeArgs(["/m", "--api-key", "secret", "--port", "9"]));
    expect(line).to.equal("{'model': '/m', 'port': 9, 'api_key': '<redacted>'}");
  });
});
