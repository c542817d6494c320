/**
 * The preflight's whole-run status as narwhal-check decides it: any failed line fails (`failed_gate`,
 * exit 1), else any skipped line degrades (`degraded`, exit 3), else it passes (`success`, exit 0);
 * warnings change nothing. The contract gate's lines carry the fingerprint narwhal computes over the
 * loaded contract (checked against narwhal-inference's own EngineContract), and report the fields the
 * contract leaves undeclared as a skip; narwhal's two warnings are reproduced (the colocated-restart one
 * checked against narwhal-inference's own rule on the same fleets).
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { colocatedRestartRisk, UNCALIBRATED_WARNING } from "../../../lib/preflight/restart-risk";
import { declaredContract } from "../../../lib/preflight/declared-contract";
import { runPreflight, type Observer, type PreflightPlan } from "../../../lib/preflight/run";
import { runSummary, stopsDeployment } from "../../../lib/preflight/status";
import { strictReplaces } from "../../../lib/preflight/outcome";
import type { GateResult } from "../../../lib/preflight/types";
import { provider } from "../../../dynamic-providers/preflight/provider";

const ROOT = path.resolve(__dirname, "../../..");
const PYTHON = path.join(ROOT, ".tools", "venv", "bin", "python");

const gate = (g: GateResult["gate"], ...lines: Array<[GateResult["lines"][number]["status"], string]>): GateResult => ({
  gate: g,
  verdict: "pass",
  lines: lines.map(([status, message]) => ({ status, message })),
});

/** The contract Gate E writes for a native engine: no image, no NIXL versions read yet. */
const CONTRACT = {
  engine_version: "0.29.0",
  image_digest: "",
  transfer_version: "",
  connector_version: 0,
  model_architecture: "LlamaForCausalLM",
  model_dtype: "bfloat16",
  kv_heads: 8,
  head_size: 128,
  hidden_layers: 32,
  attention_backend: "FLASH_ATTN",
  kv_cache_dtype: "auto",
  cross_layers_blocks: false,
  hybrid_kv_cache_manager: false,
  connector: "NixlConnector",
  kv_role: "kv_both",
  transfer_mode: "pull",
  speculative_config: "",
  enforce_handshake_compat: true,
};

describe("preflight: the whole run's status, as narwhal-check decides it", () => {
  it("a skip anywhere degrades (exit 3), even inside a gate that passed; a fail wins (exit 1); warnings change nothing (exit 0)", () => {
    const undeclared = "contract 0123456789abcdef undeclared: connector_version, transfer_version";
    const degraded = runSummary([gate("reach", ["ok", "e0 /health"], ["warn", "engines e0 share a host ..."]), gate("contract", ["ok", "declared engine contract 0123456789abcdef"], ["skip", undeclared])]);
    expect(degraded).to.deep.equal({
      status: "degraded",
      narwhal: { status: "degraded", exitCode: 3 },
      skipped: [{ gate: "contract", message: undeclared }],
      warnings: [{ gate: "reach", message: "engines e0 share a host ..." }],
      failed: [],
    });
    const failed = runSummary([gate("reach", ["fail", "e1 /health did not answer 200"]), gate("contract", ["skip", undeclared])]);
    expect([failed.status, failed.narwhal]).to.deep.equal(["fail", { status: "failed_gate", exitCode: 1 }]);
    const clean = runSummary([gate("calibration", ["warn", UNCALIBRATED_WARNING]), gate("reach", ["ok", "e0 /health"])]);
    expect([clean.status, clean.narwhal, clean.warnings.length]).to.deep.equal(["pass", { status: "success", exitCode: 0 }, 1]);
  });

  it("a failed run always stops the up; a degraded one only with preflight.strict", () => {
    expect([stopsDeployment("fail", false), stopsDeployment("degraded", false), stopsDeployment("degraded", true), stopsDeployment("pass", true)]).to.deep.equal([true, false, true, false]);
    expect(strictReplaces({ status: "degraded", strict: false }, { strict: true })).to.equal(true);
    expect(strictReplaces({ status: "pass", strict: false }, { strict: true })).to.equal(false);
    expect(strictReplaces({ status: "degraded", strict: true }, { strict: false })).to.equal(false);
    expect(strictReplaces({ status: "degraded" }, { strict: false })).to.equal(false);
  });

  it("strict turned on over a degraded run replaces it; absent strict in older state is no change", async () => {
    const inputs = { fleetDocument: { model: "tiny" }, engines: [], profiles: [], profileStoreDigest: "sha256:" + "c3".repeat(32), pairs: "mesh", repeats: 1, schedule: "concurrent" };
    expect((await provider.diff!("p", { ...inputs, status: "degraded" }, { ...inputs, strict: false })).changes).to.equal(false);
    expect((await provider.diff!("p", { ...inputs, status: "degraded" }, { ...inputs, strict: true })).replaces).to.deep.equal(["strict"]);
    expect((await provider.diff!("p", { ...inputs, status: "pass" }, { ...inputs, strict: true })).replaces).to.deep.equal([]);
  });
});

describe("preflight: the declared contract as narwhal loads it", () => {
  it("fingerprints the loaded contract exactly as narwhal-inference's EngineContract does, old vLLM names included", function () {
    if (!fs.existsSync(PYTHON)) this.skip();
    const { engine_version: _e, transfer_version: _t, ...rest } = CONTRACT;
    // The written contract, the same with vLLM's older names, and one that declares only the version.
    const documents = [CONTRACT, { ...rest, vllm_version: "0.29.0", nixl_version: "0.6.1" }, { engine_version: "0.29.0" }];
    for (const raw of documents) {
      const fleet = { schema: "narwhal.fleet", schema_version: 2, model: "tiny", engines: [{ iid: "e0", url: "http://127.0.0.1:8101", attestation_url: "http://127.0.0.1:8201/v1/attestation" }], slo: { ttft_s: 10, tpot_s: 0.125 }, engine_contract: raw };
      const loaded = spawnSync(PYTHON, ["-c", "import json,sys\nfrom narwhal.config import FleetConfig\ncfg = FleetConfig.load(sys.argv[1])\nprint(json.dumps({'fp': cfg.engine_contract.fingerprint(), 'missing': cfg.contract_missing()}))", writeTemp(fleet)], { encoding: "utf8" });
      expect(loaded.status, loaded.stderr).to.equal(0);
      const want = JSON.parse(loaded.stdout) as { fp: string; missing: string[] };
      const ours = declaredContract(raw)!;
      expect({ fp: ours.fingerprint, missing: ours.undeclared }).to.deep.equal(want);
    }
  });

  it("the contract gate prints that fingerprint and skips the undeclared fields; no calibration path warns", async () => {
    const declared = declaredContract(CONTRACT)!;
    expect(declared.undeclared).to.deep.equal(["connector_version", "speculative_config", "transfer_version"]);
    const out = await runPreflight(plan({ contract: declared }), observer());
    const contract = out.gates.find((g) => g.gate === "contract")!;
    expect(contract.lines.slice(0, 2)).to.deep.equal([
      { status: "ok", message: `declared engine contract ${declared.fingerprint}` },
      { status: "skip", message: `contract ${declared.fingerprint} undeclared: connector_version, speculative_config, transfer_version` },
    ]);
    expect(contract.verdict).to.equal("pass");
    expect(out.gates.find((g) => g.gate === "calibration")!.lines).to.deep.equal([{ status: "warn", message: UNCALIBRATED_WARNING }]);
    expect(runSummary(out.gates).status).to.equal("degraded");
  });
});

describe("preflight: narwhal-check's colocated-restart warning", () => {
  const e = (iid: string, host: string, role: "prefill" | "decode" = "decode", pin = false) => ({ iid, host, role, pin });

  it("names producers that share a host with a consumer whose sidecar does not attest peer release", () => {
    const engines = [e("e0", "h1", "prefill"), e("e1", "h1"), e("e2", "h2"), e("e3", "h3"), e("e4", "h3")];
    expect(colocatedRestartRisk(engines, new Map())).to.equal(
      "engines e0, e1, e3, e4 share a host with a KV consumer without attested peer release; that peer keeps a stopped engine's GPU memory mapped, so recover a crashed engine with a whole-wave restart",
    );
    const released = new Map(["e0", "e1", "e3", "e4"].map((id) => [id, true]));
    expect(colocatedRestartRisk(engines, released)).to.equal("");
    expect(colocatedRestartRisk([e("a", "h1"), e("b", "h2")], new Map())).to.equal("");
  });

  it("says what narwhal-inference's own colocated_restart_risk says, on the same fleets and sidecar answers", function () {
    if (!fs.existsSync(PYTHON)) this.skip();
    const script = [
      "import asyncio, json, sys, httpx",
      "from narwhal.config import FleetConfig",
      "from narwhal.diagnostics.check.engines import colocated_restart_risk",
      "cfg = FleetConfig.load(sys.argv[1])",
      "released = set(json.loads(sys.argv[2]))",
      "answer = lambda req: httpx.Response(200, json={'launch': {'peer_release': req.url.path.split('/')[1] in released}})",
      "print(json.dumps(asyncio.run(colocated_restart_risk(cfg, httpx.MockTransport(answer)))))",
    ].join("\n");
    const fleets: Array<{ engines: Array<ReturnType<typeof e>>; released: string[] }> = [
      { engines: [e("e0", "10.0.0.1", "prefill"), e("e1", "10.0.0.1"), e("e2", "10.0.0.2")], released: [] },
      { engines: [e("e0", "10.0.0.1", "prefill"), e("e1", "10.0.0.1"), e("e2", "10.0.0.2")], released: ["e1"] },
      { engines: [e("e0", "10.0.0.1", "prefill", true), e("e1", "10.0.0.1", "decode", true)], released: ["e0", "e1"] },
      { engines: [e("e0", "10.0.0.1", "prefill"), e("e1", "10.0.0.1"), e("e2", "10.0.0.1"), e("e3", "10.0.0.2", "decode", true)], released: ["e0", "e2"] },
    ];
    for (const f of fleets) {
      const doc = {
        schema: "narwhal.fleet",
        schema_version: 2,
        model: "tiny",
        engines: f.engines.map((x, i) => ({ iid: x.iid, url: `http://${x.host}:${8101 + i}`, attestation_url: `http://${x.host}:${8201 + i}/${x.iid}/v1/attestation`, role: x.role, pin: x.pin })),
        slo: { ttft_s: 10, tpot_s: 0.125 },
        engine_contract: { engine_version: "0.29.0" },
      };
      const py = spawnSync(PYTHON, ["-c", script, writeTemp(doc), JSON.stringify(f.released)], { encoding: "utf8" });
      expect(py.status, py.stderr).to.equal(0);
      expect(colocatedRestartRisk(f.engines, new Map(f.released.map((id) => [id, true]))), JSON.stringify(f)).to.equal(JSON.parse(py.stdout));
    }
  });

  it("runs after reach, under reach, only for engines sharing a host", async () => {
    const asked: string[] = [];
    const out = await runPreflight(
      plan({ restartRisk: [e("e0", "h1", "prefill"), e("e1", "h1"), e("e2", "h2")] }),
      observer({ peerRelease: async (iid) => (asked.push(iid), iid === "e1") }),
    );
    expect(asked.sort()).to.deep.equal(["e0", "e1"]);
    expect(out.gates.find((g) => g.gate === "reach")!.lines.filter((l) => l.status === "warn")).to.deep.equal([
      { status: "warn", message: "engines e1 share a host with a KV consumer without attested peer release; that peer keeps a stopped engine's GPU memory mapped, so recover a crashed engine with a whole-wave restart" },
    ]);
  });
});

let temps = 0;
function writeTemp(doc: unknown): string {
  const dir = fs.mkdtempSync(path.join(require("node:os").tmpdir(), "preflight-status-"));
  const file = path.join(dir, `fleet-${temps++}.json`);
  fs.writeFileSync(file, JSON.stringify(doc));
  return file;
}

function plan(over: Partial<PreflightPlan> = {}): PreflightPlan {
  const engines = ["e0", "e1", "e2"].map((iid, i): PreflightPlan["engines"][number] => ({ iid, role: i === 0 ? "prefill" : "decode" }));
  const row = (iid: string) => ({ iid, ttft_a: 2e-8, ttft_b: 6e-5, ttft_c: 0.005, tpot_slope: 3e-6, tpot_intercept: 0.012, generation_digest: `sha256:${iid}`, decode_min_requests: 1, decode_max_requests: 8, decode_min_kv_tokens: 300, decode_max_kv_tokens: 9000, decode_fit_mape: 0.01, decode_cv_mape: 0.02 });
  return {
    engines,
    model: "tiny",
    slo: { ttftS: 10, tpotS: 0.125 },
    tokenize: true,
    policy: { maxDecodeFitMape: 0.05, maxDecodeCvMape: 0.13 },
    profiles: new Map(engines.map((e) => [e.iid, row(e.iid)])),
    contract: null,
    pairs: "mesh",
    repeats: 1,
    schedule: "concurrent",
    timeouts: { firstTokenS: 2.5, requestS: 600 },
    ...over,
  };
}

function observer(over: Partial<Observer> = {}): Observer {
  return {
    health: async () => true,
    contract: async () => ({ version: "0.29.0", problems: [], processStart: 1 }),
    generation: async (iid) => ({ digest: `sha256:${iid}` }),
    models: async () => ["tiny"],
    pace: async () => ({ seconds: 0.6, promptTokens: 4096 }),
    tokenize: async () => 64,
    produce: async () => ({ parameters: ["remote_engine_id", "remote_block_ids"] }),
    transfer: async (p) => ({ ...p, status: "passed", firstTokenSeconds: 0.05, tokens: 4 }),
    ...over,
  };
}
