import { expect } from "chai";
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { KV_BOTH, makeModel, removeTemps, ROOT, startEngine, stopAll } from "./helpers";

/** The independent probe shipped next to the project (../shared from the repository root). */
const CONFORMANCE = resolve(ROOT, "../shared/tools/vllm-conformance.mjs");

describe("sim-engine against the independent vLLM conformance probe", function () {
  this.timeout(60000);
  after(async () => {
    await stopAll();
    removeTemps();
  });

  it("passes every check with --api-key and a real handoff to a --peer", async () => {
    const model = makeModel();
    const args = ["--served-model-name", "tiny-llama", "--kv-transfer-config", KV_BOTH];
    const env = { VLLM_API_KEY: "conformance-key" };
    const [prefill, decode] = await Promise.all([startEngine({ model, args, env }), startEngine({ model, args, env })]);
    const argv = [CONFORMANCE, "--url", prefill.url, "--model", "tiny-llama", "--api-key", "conformance-key", "--peer", decode.url];
    const run = await new Promise<{ code: number | string | null; output: string }>((done) =>
      execFile(process.execPath, argv, { timeout: 50000 }, (err, stdout, stderr) => done({ code: err ? (err.code ?? null) : 0, output: stdout + stderr })),
    );
    expect(run.code, run.output).to.equal(0);
    expect(run.output).to.match(/^20 passed, 0 failed$/m);
  });
});
