/**
 * `npm run profile`'s command line and output rules as pure logic: which mode runs, narwhal-profile's
 * argument errors word for word, `--only` selection, neighbour options, and the fresh / overwrite /
 * symlink rules for outputs on disk.
 */
import { expect } from "chai";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkOutputs, writeFresh } from "../../../lib/profiling/outputs";
import { decodeEvidenceProblems, runLive } from "../../../lib/profiling/live";
import { DEFAULT_SWEEP } from "../../../lib/profiling/sweep";
import { fleetLanes, neighboursOf, readFleet, selectEngines } from "../../../lib/profiling/fleet-file";
import { parseProfileArgs, UsageError } from "../../../lib/profiling/cli-args";
import { ProfileError } from "../../../lib/profiling/errors";
import { readLimits } from "../../../lib/profiling/limits";
import type { ProfileRow } from "../../../lib/profiling/store";

const usage = (argv: string[], message: string) => expect(() => parseProfileArgs(argv)).to.throw(UsageError, message);
const NEIGHBOURS = ["--neighbour-prefill-rps", "0.5", "--neighbour-decode-rps", "0.25", "--neighbour-prefill-tokens", "512", "--neighbour-decode-input-tokens", "128", "--neighbour-decode-output-tokens", "32"];

describe("profiling: npm run profile's command line", () => {
  it("chooses the mode: live sweep by default, refit with --refit-samples, merge with --merge", () => {
    expect(parseProfileArgs(["--fleet", "f.json"])).to.deep.equal({ mode: "live", fleet: "f.json", only: [], overwrite: false, sweep: { ...DEFAULT_SWEEP, prefillLens: [...DEFAULT_SWEEP.prefillLens], decodeInputLens: [...DEFAULT_SWEEP.decodeInputLens], decodeConcurrency: [...DEFAULT_SWEEP.decodeConcurrency] } });
    const live = parseProfileArgs(["--fleet=f.json", "--only", "e1", "--only", "e3", "--overwrite", "--limits", "l.json", "--prefill-lens", "256, 512,,1024", "--decode-tokens", "16"]);
    expect(live).to.include({ mode: "live", overwrite: true, limits: "l.json" });
    expect(live.mode === "live" && [live.only, live.sweep.prefillLens, live.sweep.decodeTokens]).to.deep.equal([["e1", "e3"], [256, 512, 1024], 16]);
    expect(parseProfileArgs(["--fleet", "f", "--refit-samples", "s.json", "--out", "r.json"])).to.deep.equal({ mode: "refit", fleet: "f", refitSamples: "s.json", out: "r.json" });
    expect(parseProfileArgs(["--fleet", "f", "--merge", "a.json", "--merge", "b.json", "--out", "m.json"])).to.deep.equal({ mode: "merge", fleet: "f", merge: ["a.json", "b.json"], out: "m.json" });
    const colocated = parseProfileArgs(["--fleet", "f", "--colocated", ...NEIGHBOURS]);
    expect(colocated.mode === "live" && colocated.colocated).to.deep.equal({ prefillRps: 0.5, decodeRps: 0.25, prefillTokens: 512, decodeInputTokens: 128, decodeOutputTokens: 32 });
  });

  it("refuses what narwhal-profile refuses, with its words", () => {
    usage([], "the following arguments are required: --fleet");
    usage(["--fleet", "f", "--cached-prefix-lens", "1,2"], "unrecognized arguments: --cached-prefix-lens");
    usage(["--fleet", "f", "--merge", "a.json", "--out", "m.json"], "--merge needs at least two measured profile stores");
    usage(["--fleet", "f", "--merge", "a", "--merge", "b"], "--merge requires --out and cannot combine with refit, only, or overwrite");
    usage(["--fleet", "f", "--merge", "a", "--merge", "b", "--out", "m", "--overwrite"], "--merge requires --out and cannot combine with refit, only, or overwrite");
    usage(["--fleet", "f", "--merge", "a", "--merge", "b", "--out", "m", "--only", "e0"], "--merge requires --out and cannot combine with refit, only, or overwrite");
    usage(["--fleet", "f", "--merge", "a", "--merge", "b", "--out", "m", "--refit-samples", "s"], "--merge requires --out and cannot combine with refit, only, or overwrite");
    usage(["--fleet", "f", "--refit-samples", "s"], "--refit-samples requires --out and a complete fleet selection");
    usage(["--fleet", "f", "--out", "o"], "--refit-samples requires --out and a complete fleet selection");
    usage(["--fleet", "f", "--refit-samples", "s", "--out", "o", "--only", "e0"], "--refit-samples requires --out and a complete fleet selection");
    usage(["--fleet", "f", "--prefill-lens", "256,512,256"], "the sweep needs at least three distinct prefill lengths");
    usage(["--fleet", "f", "--decode-concurrency", "4"], "the decode fit needs two distinct input lengths and two distinct concurrency steps");
    usage(["--fleet", "f", "--prefill-lens", "0,256,512"], "profile lengths must be positive");
    usage(["--fleet", "f", "--decode-concurrency", "0,4"], "decode concurrency must be at least 1");
    usage(["--fleet", "f", "--prefill-repeats", "2"], "--decode-tokens needs at least 3 (two intervals need three tokens); --prefill-repeats at least 3 for a repeat median; --decode-repeats at least 1");
    usage(["--fleet", "f", "--prefill-lens", "a,b,c"], "--prefill-lens, --decode-input-lens and --decode-concurrency take comma-separated integers");
    usage(["--fleet", "f", "--decode-tokens", "many"], "argument --decode-tokens: invalid int value: 'many'");
    // Sweep values are checked before the mode, as narwhal does: even a merge is refused for them.
    usage(["--fleet", "f", "--merge", "a", "--merge", "b", "--out", "m", "--prefill-repeats", "1"], "--prefill-repeats at least 3");
    usage(["--fleet", "f", "--refit-samples", "s", "--out", "o", "--observation-timeout-s", "5"], "--observation-timeout-s applies only to live profiling");
  });

  it("words node's parseArgs refusals as argparse does, and takes a negative number as a value", () => {
    const exactly = (argv: string[], message: string) => expect(() => parseProfileArgs(argv)).to.throw(UsageError).with.property("message", message);
    exactly(["--fleet", "f", "--cached-prefix-lens=1,2"], "unrecognized arguments: --cached-prefix-lens=1,2");
    exactly(["--fleet", "f", "stray"], "unrecognized arguments: stray");
    exactly(["--fleet"], "argument --fleet: expected one argument");
    exactly(["--fleet", "--overwrite"], "argument --fleet: expected one argument");
    exactly(["--fleet", "f", "--overwrite=yes"], "argument --overwrite: ignored explicit argument 'yes'");
    // argparse reads "-2" after a valued option as its value; the sweep check then refuses it.
    exactly(["--fleet", "f", "--decode-tokens", "-2"], "--decode-tokens needs at least 3 (two intervals need three tokens); --prefill-repeats at least 3 for a repeat median; --decode-repeats at least 1");
    const last = parseProfileArgs(["--fleet", "a", "--fleet", "b", "--limits", "x", "--limits", "y"]);
    expect(last.fleet === "b" && last.mode === "live" && last.limits).to.equal("y");
  });

  it("needs all five neighbour options with --colocated, finite and positive, and none without it", () => {
    usage(["--fleet", "f", "--colocated", ...NEIGHBOURS.slice(0, 8)], "--colocated requires positive neighbour rates and token lengths");
    usage(["--fleet", "f", "--colocated", ...NEIGHBOURS.slice(2), "--neighbour-prefill-rps", "inf"], "--colocated requires positive neighbour rates and token lengths");
    usage(["--fleet", "f", "--colocated", ...NEIGHBOURS.slice(2), "--neighbour-prefill-rps", "nan"], "--colocated requires positive neighbour rates and token lengths");
    usage(["--fleet", "f", "--colocated", ...NEIGHBOURS.slice(0, 2), "--neighbour-decode-rps", "0", ...NEIGHBOURS.slice(4)], "--colocated requires positive neighbour rates and token lengths");
    usage(["--fleet", "f", "--colocated", ...NEIGHBOURS.slice(0, 4), "--neighbour-prefill-tokens", "1.5", ...NEIGHBOURS.slice(6)], "argument --neighbour-prefill-tokens: invalid int value: '1.5'");
    usage(["--fleet", "f", ...NEIGHBOURS.slice(0, 2)], "neighbour load options require --colocated");
  });
});

describe("profiling: fleet selection and lanes", () => {
  const fleet = readFleet(
    {
      schema: "narwhal.fleet",
      model: "tiny",
      engines: [
        { iid: "e0", url: "${E0_URL}", role: "prefill", shared_device: { group: "gpu0" } },
        { iid: "e1", url: "http://127.0.0.1:2/", shared_device: { group: "gpu0" } },
        { iid: "e2", url: "http://127.0.0.1:3" },
      ],
      profiles: { path: "runs/p.json", max_decode_fit_mape: 0.1 },
      engine: { engine_api_key_env: "KEY" },
    },
    { E0_URL: "http://127.0.0.1:1" },
  );

  it("reads the engines, resolving whole-value ${NAME} URLs", () => {
    expect(fleet.engines).to.deep.equal([
      { iid: "e0", url: "http://127.0.0.1:1", role: "prefill", group: "gpu0" },
      { iid: "e1", url: "http://127.0.0.1:2", role: "decode", group: "gpu0" },
      { iid: "e2", url: "http://127.0.0.1:3", role: "decode" },
    ]);
    expect([fleet.profilesPath, fleet.apiKeyEnv, fleet.maxDecodeFitMape, fleet.maxDecodeCvMape, fleet.hasContract]).to.deep.equal(["runs/p.json", "KEY", 0.1, 0.13, false]);
    expect(() => readFleet({ schema: "narwhal.fleet", model: "m", engines: [{ iid: "e0", url: "${NOPE}" }] }, {})).to.throw(ProfileError, "engines[0].url: environment variable NOPE is unset or empty");
  });

  it("selects with --only, and stops when it matches no engine", () => {
    expect(selectEngines(fleet.engines, ["e2", "e0"]).map((e) => e.iid)).to.deep.equal(["e0", "e2"]);
    expect(selectEngines(fleet.engines, []).map((e) => e.iid)).to.deep.equal(["e0", "e1", "e2"]);
    expect(() => selectEngines(fleet.engines, ["e9"])).to.throw(ProfileError, "no matching instances");
  });

  it("runs engines of one GPU group in turn, and every engine in turn with --colocated", () => {
    expect(fleetLanes(fleet.engines, false).map((l) => l.map((e) => e.iid))).to.deep.equal([["e0", "e1"], ["e2"]]);
    expect(fleetLanes(fleet.engines, true).map((l) => l.map((e) => e.iid))).to.deep.equal([["e0", "e1", "e2"]]);
    expect(neighboursOf(fleet.engines[0], fleet.engines).map((e) => e.iid)).to.deep.equal(["e1"]);
    expect(() => neighboursOf(fleet.engines[2], fleet.engines)).to.throw(ProfileError, "e2: --colocated requires a shared_device group");
  });

  it("reads generated limits that name exactly the fleet's engines", () => {
    const doc = { schema: "narwhal.profiling-limits", schema_version: 1, engines: { e0: 8, e1: 4, e2: 8 } };
    expect(readLimits(doc, "l.json", ["e0", "e1", "e2"])).to.deep.equal({ e0: 8, e1: 4, e2: 8 });
    expect(() => readLimits({ ...doc, schema_version: 2 }, "l.json", ["e0"])).to.throw(ProfileError, "invalid profiling limits: l.json");
    expect(() => readLimits(doc, "l.json", ["e0", "e1"])).to.throw(ProfileError, "profiling limits must name every fleet engine with a positive limit: l.json");
  });
});

describe("profiling: output rules", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), "profile-outputs-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a live sweep refuses existing outputs unless --overwrite; refits and merges always need fresh ones", async () => {
    const store = join(dir, "live", "profiles.json");
    await checkOutputs(store, "live");
    mkdirSync(join(dir, "live"));
    writeFileSync(join(dir, "live", "profiles.samples.json"), "{}");
    const err = (p: Promise<unknown>) => p.then(() => undefined, (e: Error) => e.message);
    expect(await err(checkOutputs(store, "live"))).to.equal(`output exists: ${join(dir, "live", "profiles.samples.json")}; use a new path or --overwrite`);
    expect(await err(checkOutputs(store, "live-overwrite"))).to.equal(undefined);
    expect(await err(checkOutputs(store, "fresh"))).to.equal(`output exists: ${join(dir, "live", "profiles.samples.json")}; choose a fresh profile path`);
    symlinkSync(join(dir, "elsewhere.json"), join(dir, "live", "link.json"));
    expect(await err(checkOutputs(join(dir, "live", "link.json"), "live-overwrite"))).to.equal(`refusing symlink output: ${join(dir, "live", "link.json")}`);
  });

  it("writes a fresh store and sidecar whole, 0600, and never over a file", async () => {
    const out = join(dir, "fresh", "refit.json");
    expect(await writeFresh(out, Buffer.from("store\n"), Buffer.from("samples\n"))).to.deep.equal({ path: out, samplesPath: join(dir, "fresh", "refit.samples.json") });
    expect(readFileSync(out, "utf8")).to.equal("store\n");
    expect(statSync(join(dir, "fresh", "refit.samples.json")).mode & 0o777).to.equal(0o600);
    const again = await writeFresh(out, Buffer.from("other"), Buffer.from("other")).catch((e: Error) => e);
    expect((again as Error).message).to.equal(`output exists: ${out}; choose a fresh profile path`);
    expect(readFileSync(out, "utf8")).to.equal("store\n");
  });
});

describe("profiling: live sweep rules before anything is measured", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), "profile-live-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const live = (document: Record<string, unknown>, only: string[] = []) =>
    runLive({
      fleet: readFleet({ schema: "narwhal.fleet", model: "tiny", engines: [{ iid: "e0", url: "http://127.0.0.1:1" }], profiles: { path: join(dir, "p.json") }, ...document }),
      only,
      overwrite: false,
      sweep: DEFAULT_SWEEP,
      clientFor: () => {
        throw new Error("no engine may be contacted");
      },
      probeTimeoutS: 1,
      requestTimeoutS: 1,
      meta: {},
      log: () => undefined,
    }).then(
      () => "done",
      (e: ProfileError) => `${e.code}: ${e.message}`,
    );

  it("stops on an empty selection, and leaves a fleet with an engine contract to the stack's attested profiles", async () => {
    expect(await live({}, ["e9"])).to.equal("NARWHAL_PROFILE_SELECTION: no matching instances");
    expect(await live({ engine_contract: { vllm_version: "0.29.0" } })).to.match(/^NARWHAL_PROFILE_GENERATION: this fleet has an engine_contract: its profiles bind verified attestations/);
  });

  it("rejects a profile whose decode evidence breaks the fleet's limits, in narwhal's words", () => {
    const row = { iid: "e0", decode_min_requests: 4, decode_max_requests: 4, decode_min_kv_tokens: 100, decode_max_kv_tokens: 900, decode_fit_mape: 0.06, decode_cv_mape: 0.02 } as ProfileRow;
    expect(decodeEvidenceProblems(row, 0.05, 0.13)).to.deep.equal([
      "e0 decode request domain is a single point (4); the sweep must span both axes independently",
      "e0 decode_fit_mape 0.0600 exceeds the profile-validation limit 0.05",
    ]);
    expect(decodeEvidenceProblems({ ...row, decode_min_requests: 1, decode_fit_mape: 0.01 }, 0.05, 0.13)).to.deep.equal([]);
  });
});
