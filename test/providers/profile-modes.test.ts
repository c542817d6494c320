/**
 * `npm run profile` run as a command against engine simulators on 127.0.0.1: `--only` and
 * `--overwrite`, refit of the retained samples, merge of stores measured apart, and colocated neighbour
 * load, including a neighbour that stalls. Every store written loads in narwhal-inference's own
 * loader, and narwhal-profile's own `--refit-samples` and `--merge` accept the stores and sidecars this
 * command writes.
 */
import { expect } from "chai";
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import { createServer, type Server } from "node:http";
import * as path from "node:path";
import { makeModel, removeTemps, ROOT, startEngine, stopAll, tempDir, type SimEngine } from "../unit/sim-engine/helpers";

const API_KEY = "sk-narwhal-modes-7d3f1b";
const KEY_ENV = "NARWHAL_MODES_TEST_KEY";
const PYTHON = path.join(ROOT, ".tools", "venv", "bin", "python");
const NARWHAL_PROFILE = path.join(ROOT, ".tools", "venv", "bin", "narwhal-profile");
const TS_REQUIRE = path.join(ROOT, "tools", "ts-require.js");
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--max-model-len", "4096", "--max-num-seqs", "8", "--no-enable-prefix-caching"];
/**
 * A small sweep: four prefill lengths long enough that a busy machine's jitter stays well
 * inside the contract's fit limits, five repeats each, and six decode points (enough for a
 * cross-validation error).
 */
const SWEEP = ["--prefill-lens", "512,1024,2048,3072", "--prefill-repeats", "5", "--decode-input-lens", "256,1024", "--decode-concurrency", "1,4,8", "--decode-tokens", "32"];
/** Bounded wait for one command run. */
const RUN_TIMEOUT_MS = 240_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function profile(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["-r", TS_REQUIRE, path.join(ROOT, "scripts", "profile.ts"), ...args], { cwd: ROOT, env: { ...process.env, [KEY_ENV]: API_KEY }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), RUN_TIMEOUT_MS);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** What narwhal-inference's ProfileStore reads from `file`. */
function narwhalLoad(file: string, ids: string[]): { n: number; variants: number; diff: [string[], string[]]; rows: Array<Record<string, unknown>> } {
  const script = [
    "import json, sys",
    "from dataclasses import asdict",
    "from pathlib import Path",
    "from narwhal.profiling.store import ProfileStore",
    "s = ProfileStore(Path(sys.argv[1]))",
    "print(json.dumps({'n': len(s), 'variants': len(s.all_profiles()), 'diff': s.engine_set_diff(json.loads(sys.argv[2])), 'rows': [asdict(p) for p in s.all_profiles()]}))",
  ].join("\n");
  return JSON.parse(execFileSync(PYTHON, ["-c", script, file, JSON.stringify(ids)], { encoding: "utf8" }));
}

const readJson = (file: string) => JSON.parse(fs.readFileSync(file, "utf8"));

describe("providers: npm run profile's modes against simulated engines", function () {
  this.timeout(900_000);
  let dir: string;
  const engines: SimEngine[] = [];
  let stall: Server;
  let stallUrl: string;

  /** A fleet.json; `measuring` fleets loosen the decode limits, which narwhal's own loader refuses (they exceed its controller margin). */
  function fleet(name: string, members: Array<{ iid: string; url: string; role?: string; group?: string }>, profilesPath: string, measuring = true): string {
    const file = path.join(dir, `${name}.fleet.json`);
    const doc = {
      schema: "narwhal.fleet",
      schema_version: 2,
      model: "tiny",
      engines: members.map((m) => ({ iid: m.iid, url: m.url, role: m.role ?? "decode", ...(m.group ? { shared_device: { group: m.group, gpu_uuid: "GPU-0", device_allowance: 1, gpu_memory_utilization: 0.4 } } : {}) })),
      slo: { ttft_s: 10, tpot_s: 0.5 },
      engine: { engine_api_key_env: KEY_ENV },
      // Loose decode limits: these runs are about the modes, on a machine whose load moves decode timings.
      profiles: { path: profilesPath, ...(measuring ? { max_decode_fit_mape: 0.3, max_decode_cv_mape: 0.5 } : {}) },
    };
    fs.writeFileSync(file, JSON.stringify(doc, null, 2));
    return file;
  }
  const plain = () => engines.map((e, i) => ({ iid: `e${i}`, url: e.url }));

  before(async () => {
    dir = tempDir("profile-modes-");
    const model = makeModel({});
    for (const latency of [{}, { prefillA: 4e-8, decodeKv: 6e-6, decodeBase: 0.02 }]) {
      engines.push(await startEngine({ model, args: ARGS, sim: { timeScale: 0.5, startupDelayS: 0, latency: { default: latency } } }));
    }
    // A neighbour that answers /tokenize but never finishes a completion.
    stall = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        if (req.url === "/tokenize") {
          const prompt = (JSON.parse(body) as { prompt: string }).prompt;
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ count: Math.ceil(prompt.length / 10), max_model_len: 2048, tokens: [] }));
        }
        // Anything else is held open: the neighbour has stalled.
      });
    });
    await new Promise<void>((r) => stall.listen(0, "127.0.0.1", () => r()));
    stallUrl = `http://127.0.0.1:${(stall.address() as { port: number }).port}`;
  });

  after(async () => {
    stall?.closeAllConnections();
    stall?.close();
    await stopAll();
    removeTemps();
  });

  it("--only measures the selected engine; a second run refuses to replace it without --overwrite; no match is exit 2; an unhealthy engine exit 1; --version and bad arguments", async () => {
    const f = fleet("split-1", plain(), path.join(dir, "split-1.json"));
    const first = await profile(["--fleet", f, "--only", "e0", ...SWEEP]);
    expect(first.code, first.stderr).to.equal(0);
    expect(first.stdout).to.contain("profiling 1 instance(s) against model tiny");
    expect(first.stdout.trim().split("\n").at(-1)).to.equal(`wrote 1 profile(s) to ${path.join(dir, "split-1.json")}`);
    expect(narwhalLoad(path.join(dir, "split-1.json"), ["e0", "e1"]).diff).to.deep.equal([["e1"], []]);
    const again = await profile(["--fleet", f, "--only", "e0", ...SWEEP]);
    expect(again.code).to.equal(2);
    expect(again.stderr.trim()).to.equal(`profile: profile fleet ${f}: output exists: ${path.join(dir, "split-1.json")}; use a new path or --overwrite`);
    const version = await profile(["--version"]);
    expect([version.code, version.stdout]).to.deep.equal([0, `profile (narwhal-fleet) ${readJson(path.join(ROOT, "package.json")).version}\n`]);
    const bad = await profile(["--fleet", f, "--merge", path.join(dir, "split-1.json"), "--out", path.join(dir, "m.json")]);
    expect([bad.code, bad.stderr.split("\n").at(-2)]).to.deep.equal([2, "profile: error: --merge needs at least two measured profile stores"]);
    const none = await profile(["--fleet", fleet("none", plain(), path.join(dir, "none.json")), "--only", "e9"]);
    expect([none.code, none.stderr.trim()]).to.deep.equal([2, "no matching instances"]);
    // An engine that does not answer /health stops the run with exit 1, and no store is written.
    const down = await profile(["--fleet", fleet("down", [{ iid: "gone", url: "http://127.0.0.1:1" }], path.join(dir, "down.json")), ...SWEEP]);
    expect(down.code).to.equal(1);
    expect(down.stderr).to.match(/^profile: profile fleet .*: gone: not healthy, aborting \(engine gone at http:\/\/127\.0\.0\.1:1 \/health answered .*ECONNREFUSED.*, not 200\)\n$/);
    expect(fs.existsSync(path.join(dir, "down.json"))).to.equal(false);
    expect(readJson(path.join(dir, "down.samples.json")).engines.gone.error).to.match(/^ProfileError: gone: not healthy, aborting/);
    const f2 = fleet("split-2", plain(), path.join(dir, "split-2.json"));
    const second = await profile(["--fleet", f2, "--only", "e1", ...SWEEP]);
    expect(second.code, second.stderr).to.equal(0);
  });

  it("measures the whole fleet within each engine's limit, and --overwrite with --only leaves a store of the selected engines", async () => {
    const store = path.join(dir, "runs", "profiles.json");
    const f = fleet("main", plain(), store);
    // e1's launch plan allows four sequences: its decode concurrency stops there.
    const limits = path.join(dir, "limits.json");
    fs.writeFileSync(limits, JSON.stringify({ schema: "narwhal.profiling-limits", schema_version: 1, engines: { e0: 8, e1: 4 } }));
    const all = await profile(["--fleet", f, "--limits", limits, ...SWEEP]);
    expect(all.code, all.stderr).to.equal(0);
    expect(all.stdout).to.contain(`wrote 2 profile(s) to ${store}`);
    const loaded = narwhalLoad(store, ["e0", "e1"]);
    expect([loaded.n, loaded.diff]).to.deep.equal([2, [[], []]]);
    // Each engine's curve is its own: e1 plays twice e0's decode cost per resident KV token.
    const [k0, k1] = ["e0", "e1"].map((id) => loaded.rows.find((r) => r.iid === id)!.tpot_slope as number);
    expect(k1 / k0).to.be.within(1.5, 2.7);
    const samples = readJson(path.join(dir, "runs", "profiles.samples.json"));
    expect(Object.keys(samples.engines)).to.deep.equal(["e0", "e1"]);
    expect(samples.engines.e0.generation_evidence.engine.version).to.be.a("string");
    expect(samples.engines.e0.prefill).to.have.length(20);
    expect([samples.engines.e1.max_num_seqs, samples.engines.e1.sweep.decode_concurrency]).to.deep.equal([4, [1, 4]]);
    expect(loaded.rows.map((r) => r.decode_max_requests)).to.deep.equal([8, 4]);
    fs.copyFileSync(store, path.join(dir, "full.json"));
    fs.copyFileSync(path.join(dir, "runs", "profiles.samples.json"), path.join(dir, "full.samples.json"));
    const only = await profile(["--fleet", f, "--only", "e1", "--overwrite", ...SWEEP]);
    expect(only.code, only.stderr).to.equal(0);
    expect(only.stdout).to.contain(`wrote 1 profile(s) to ${store}`);
    expect(narwhalLoad(store, ["e0", "e1"]).diff).to.deep.equal([["e0"], []]);
    expect(Object.keys(readJson(path.join(dir, "runs", "profiles.samples.json")).engines)).to.deep.equal(["e1"]);
  });

  it("refits TTFT from the retained samples into a fresh output only, with samples covering every engine", async () => {
    const f = fleet("refit", plain(), path.join(dir, "unused.json"));
    const out = path.join(dir, "refitted.json");
    const r = await profile(["--fleet", f, "--refit-samples", path.join(dir, "full.samples.json"), "--out", out]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^ {2}e0: prefill median fit MAPE \d+\.\d%\n {2}e1: prefill median fit MAPE \d+\.\d%\n/);
    expect(r.stdout.trim().split("\n").at(-1)).to.equal(`refitted 2 profile(s) to ${out}`);
    const [before, after] = [narwhalLoad(path.join(dir, "full.json"), ["e0", "e1"]), narwhalLoad(out, ["e0", "e1"])];
    expect(after.diff).to.deep.equal([[], []]);
    // The same raw timings give the same curve; decode fits and bindings are kept as they were.
    expect(after.rows).to.deep.equal(before.rows);
    const sidecar = readJson(path.join(dir, "refitted.samples.json"));
    expect(sidecar.prefill_refit_source).to.equal(path.join(dir, "full.samples.json"));
    expect(sidecar.engines.e1.decode_intervals.length).to.be.above(0);
    // narwhal-profile's own refit accepts this command's sidecar and finds the same curves.
    const theirs = path.join(dir, "narwhal-refitted.json");
    execFileSync(NARWHAL_PROFILE, ["--fleet", fleet("refit-narwhal", plain(), path.join(dir, "unused.json"), false), "--refit-samples", path.join(dir, "full.samples.json"), "--out", theirs], { env: { ...process.env, [KEY_ENV]: API_KEY } });
    for (const [i, row] of narwhalLoad(theirs, ["e0", "e1"]).rows.entries()) {
      for (const k of ["ttft_a", "ttft_b", "ttft_c"]) expect(row[k]).to.be.closeTo(after.rows[i][k] as number, 1e-9 + 1e-6 * Math.abs(after.rows[i][k] as number));
    }
    const again = await profile(["--fleet", f, "--refit-samples", path.join(dir, "full.samples.json"), "--out", out]);
    expect([again.code, again.stderr.trim()]).to.deep.equal([2, `profile: profile fleet ${f}: output exists: ${out}; choose a fresh profile path`]);
    const partial = await profile(["--fleet", f, "--refit-samples", path.join(dir, "split-1.samples.json"), "--out", path.join(dir, "refit-2.json")]);
    expect([partial.code, partial.stderr.trim()]).to.deep.equal([2, `profile: profile fleet ${f}: saved profile samples must cover every configured engine`]);
    expect(fs.existsSync(path.join(dir, "refit-2.json"))).to.equal(false);
  });

  it("merges stores measured apart, recording each source's SHA-256; narwhal-profile --merge accepts the same sources", async () => {
    const f = fleet("merge", plain(), path.join(dir, "unused.json"), false);
    const [s1, s2] = [path.join(dir, "split-1.json"), path.join(dir, "split-2.json")];
    const out = path.join(dir, "combined.json");
    const r = await profile(["--fleet", f, "--merge", s1, "--merge", s2, "--out", out]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout.trim()).to.equal(`merged 2 measured profiles to ${out}`);
    expect(narwhalLoad(out, ["e0", "e1"]).diff).to.deep.equal([[], []]);
    const sha = (p: string) => require("node:crypto").createHash("sha256").update(fs.readFileSync(p)).digest("hex");
    expect(readJson(path.join(dir, "combined.samples.json"))).to.deep.equal({
      method_version: 3,
      sources: [s1, s2].map((p) => ({ profiles: p, profiles_sha256: sha(p), samples: p.replace(/\.json$/, ".samples.json"), samples_sha256: sha(p.replace(/\.json$/, ".samples.json")) })),
    });
    const theirs = path.join(dir, "narwhal-combined.json");
    execFileSync(NARWHAL_PROFILE, ["--fleet", f, "--merge", s1, "--merge", s2, "--out", theirs], { env: { ...process.env, [KEY_ENV]: API_KEY }, encoding: "utf8" });
    expect(narwhalLoad(theirs, ["e0", "e1"]).rows).to.deep.equal(narwhalLoad(out, ["e0", "e1"]).rows);
    // The same engine twice, or a fleet engine missing, is refused.
    const dup = await profile(["--fleet", f, "--merge", s1, "--merge", s1, "--out", path.join(dir, "dup.json")]);
    expect([dup.code, dup.stderr.trim()]).to.deep.equal([2, `profile: profile fleet ${f}: duplicate measured profile variant: ('e0', None, None, None, None)`]);
    const f3 = fleet("merge-3", [...plain(), { iid: "e2", url: stallUrl }], path.join(dir, "unused.json"));
    const short = await profile(["--fleet", f3, "--merge", s1, "--merge", s2, "--out", path.join(dir, "short.json")]);
    expect([short.code, short.stderr.trim()]).to.deep.equal([2, `profile: profile fleet ${f3}: merged profiles miss fleet engines: e2`]);
  });

  it("measures with neighbour load on the shared GPU group and records each neighbour's completions, rate and errors", async () => {
    const store = path.join(dir, "colocated.json");
    const f = fleet("colocated", [{ iid: "e0", url: engines[0].url, role: "prefill", group: "gpu0" }, { iid: "e1", url: engines[1].url, role: "decode", group: "gpu0" }], store);
    const load = ["--colocated", "--neighbour-prefill-rps", "2", "--neighbour-decode-rps", "2", "--neighbour-prefill-tokens", "128", "--neighbour-decode-input-tokens", "64", "--neighbour-decode-output-tokens", "8"];
    const r = await profile(["--fleet", f, "--only", "e0", ...SWEEP, ...load]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.contain(`wrote 1 profile(s) to ${store}`);
    const loaded = narwhalLoad(store, ["e0", "e1"]);
    const row = loaded.rows[0];
    expect([row.colocated_group, row.colocated_target_role, row.colocated_prefill_engines, row.colocated_decode_engines]).to.deep.equal(["gpu0", "prefill", 1, 1]);
    const evidence = readJson(path.join(dir, "colocated.samples.json")).engines.e0.colocated_load;
    expect(evidence.peers.e1.role).to.equal("decode");
    expect(evidence.peers.e1.completed).to.be.above(0);
    expect(evidence.peers.e1.error).to.equal(null);
    expect(evidence.peers.e1.rps).to.be.closeTo(evidence.completed_decode / evidence.elapsed_s, 1e-9);
    expect(row.colocated_decode_rps).to.equal(evidence.decode_rps);
    expect(evidence.decode_rps).to.be.within(0.5, 2.2);
  });

  it("rejects the measurement when a neighbour stalls, keeping the neighbour evidence and writing no store", async () => {
    const store = path.join(dir, "stalled.json");
    const f = fleet("stalled", [{ iid: "e0", url: engines[0].url, role: "prefill", group: "gpu1" }, { iid: "slow", url: stallUrl, role: "decode", group: "gpu1" }], store);
    const load = ["--colocated", "--neighbour-prefill-rps", "2", "--neighbour-decode-rps", "2", "--neighbour-prefill-tokens", "128", "--neighbour-decode-input-tokens", "64", "--neighbour-decode-output-tokens", "8"];
    const r = await profile(["--fleet", f, "--only", "e0", ...SWEEP, ...load]);
    expect(r.code).to.equal(1);
    expect(r.stderr.trim()).to.equal(`profile: profile fleet ${f}: e0: neighbour load failed: slow: completed 0 requests during measurement`);
    expect(fs.existsSync(store)).to.equal(false);
    const entry = readJson(path.join(dir, "stalled.samples.json")).engines.e0;
    expect(entry.error).to.equal("ProfileError: neighbour load failed: slow: completed 0 requests during measurement");
    expect(entry.colocated_load.peers.slow).to.deep.equal({ role: "decode", completed: 0, rps: 0, error: "completed 0 requests during measurement" });
    expect(entry.prefill.length).to.equal(20);
  });
});
