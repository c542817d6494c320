/**
 * The engine simulator against the independent vLLM conformance probe, which ships beside the project,
 * not in it: `.ci/run` runs this file and names the probe in NARWHAL_VLLM_CONFORMANCE; `npm test` does not
 * run it, so the suite needs nothing outside the repository.
 */
import { expect } from "chai";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { http, KV_BOTH, makeModel, removeTemps, startEngine, stopAll } from "../unit/sim-engine/helpers";

const PROBE = process.env.NARWHAL_VLLM_CONFORMANCE ?? "";
const PROBE_TIMEOUT_MS = 50_000;

describe("sim-engine against the independent vLLM conformance probe", function () {
  this.timeout(120_000);
  before(function () {
    if (!PROBE || !existsSync(PROBE)) throw new Error(`the conformance probe is not at ${JSON.stringify(PROBE)}; set NARWHAL_VLLM_CONFORMANCE to its path (.ci/run does)`);
  });
  after(async () => {
    await stopAll();
    removeTemps();
  });

  it("passes every check with --api-key and a real handoff to a --peer, and serves no /sim/ path on the engine port", async () => {
    const model = makeModel();
    const args = ["--served-model-name", "tiny-llama", "--kv-transfer-config", KV_BOTH];
    const env = { VLLM_API_KEY: "conformance-key" };
    const [prefill, decode] = await Promise.all([startEngine({ model, args, env }), startEngine({ model, args, env })]);
    const argv = [PROBE, "--url", prefill.url, "--model", "tiny-llama", "--api-key", "conformance-key", "--peer", decode.url];
    const run = await new Promise<{ code: number | string | null; output: string }>((done) =>
      execFile(process.execPath, argv, { timeout: PROBE_TIMEOUT_MS }, (err, stdout, stderr) => done({ code: err ? (err.code ?? null) : 0, output: stdout + stderr })),
    );
    expect(run.code, run.output).to.equal(0);
    expect(run.output).to.match(/^\d+ passed, 0 failed$/m);
    // A real vLLM answers 404 to every path it does not serve, the simulator's own routes included.
    for (const path of ["/sim/truth", "/sim/cache-layout"]) expect((await http(prefill.url + path)).status, path).to.equal(404);
    expect((await http(prefill.url + "/sim/dead", { body: {}, headers: { "x-narwhal-sim": "1" } })).status, "POST /sim/dead").to.equal(404);
  });
});
