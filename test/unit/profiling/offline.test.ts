/**
 * narwhal-profile's offline modes as pure logic: `--refit-samples` rebuilds TTFT from retained raw
 * timings and keeps the rest; `--merge` combines measured stores variant by variant. Each rejection
 * uses narwhal's wording; merged and refitted outputs load in narwhal-inference's own loader.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { buildRow, documentBytes, sha256Hex, storeDocument, type ProfileRow } from "../../../lib/profiling/store";
import { fitDecodePlane, fitPrefill, type DecodePoint } from "../../../lib/profiling/fit";
import { mergeStores, type MergeSource } from "../../../lib/profiling/merge";
import { ProfileError } from "../../../lib/profiling/errors";
import { refitSamples } from "../../../lib/profiling/refit";

const PYTHON = resolve(__dirname, "../../../.tools/venv/bin/python");
const DIGEST = "sha256:" + "ab".repeat(32);
const TRUE = { a: 2e-8, b: 6e-5, c: 0.005 };

function prefillSamples(scale = 1): Array<[number, number]> {
  return [256, 1024, 2048, 4096].flatMap((n) => [0.98, 1, 1.03].map((f): [number, number] => [n, scale * f * (TRUE.a * n * n + TRUE.b * n + TRUE.c)]));
}

function row(iid: string, extra: Partial<ProfileRow> = {}, scale = 1): ProfileRow {
  const prefill = prefillSamples(scale);
  const points: DecodePoint[] = [512, 4096].flatMap((isl) => [1, 4].map((q) => [q, q * isl, 0.012 + 3e-6 * q * isl + 0.002 * q] as DecodePoint));
  const r = buildRow({
    iid,
    generationDigest: DIGEST,
    prefill: fitPrefill(prefill),
    prefillSamples: prefill,
    blockTokens: null,
    decode: fitDecodePlane(points),
    decodePoints: points,
    decodeFitMape: 0.01,
    decodeCvMape: 0.02,
    kvCapacityTokens: 100000,
    decodeMaxOutputTokens: 64,
  });
  return { ...r, ...extra };
}

/** A sidecar as a live sweep writes it, its raw timings `scale` times the rows' curve. */
function samples(rows: ProfileRow[], scale = 1): Record<string, unknown> {
  return {
    method_version: 2,
    meta: {},
    model: "tiny",
    sweep: {},
    observation_timeout_s: null,
    engines: Object.fromEntries(
      rows.map((r) => [r.iid, { max_model_len: 32768, generation_evidence: { engine: { version: "0.29.0", process_start_time_seconds: 1.5 } }, prefill: prefillSamples(scale), prefill_block_tokens: null, decode: [], profile: r }]),
    ),
  };
}

const rejects = (fn: () => unknown, message: string) => {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err, `expected: ${message}`).to.be.instanceOf(ProfileError);
  expect((err as Error).message).to.equal(message);
};

describe("profiling: refit of retained samples", () => {
  it("refits TTFT from every raw timing, keeping decode fits, the binding and every observation", () => {
    const rows = [row("e0"), row("e1")];
    // The saved rows carry a stale curve: the raw timings say prefill takes 1.5 times as long.
    const got = refitSamples(samples(rows, 1.5), "/runs/profiles.samples.json", ["e1", "e0"]);
    expect(got.rows.map((r) => r.iid)).to.deep.equal(["e0", "e1"]);
    for (const [i, r] of got.rows.entries()) {
      expect(r.ttft_a).to.be.closeTo(1.5 * TRUE.a, 1.5 * TRUE.a * 0.05);
      expect(r.ttft_b).to.be.closeTo(1.5 * TRUE.b, 1.5 * TRUE.b * 0.05);
      const { ttft_a, ttft_b, ttft_c, ...decode } = r;
      const { ttft_a: _a, ttft_b: _b, ttft_c: _c, ...before } = rows[i];
      expect(decode).to.deep.equal(before);
      void [ttft_a, ttft_b, ttft_c, _a, _b, _c];
    }
    const e0 = (got.record.engines as Record<string, Record<string, unknown>>).e0;
    expect(e0.profile).to.deep.equal(got.rows[0]);
    expect(e0.prefill).to.deep.equal(prefillSamples(1.5));
    expect(e0.generation_evidence).to.deep.equal({ engine: { version: "0.29.0", process_start_time_seconds: 1.5 } });
    expect((e0.prefill_fit_points as unknown[]).length).to.equal(4);
    expect(got.record.prefill_refit_source).to.equal("/runs/profiles.samples.json");
    expect(got.lines).to.have.length(2);
    expect(got.lines[0]).to.match(/^ {2}e0: prefill median fit MAPE \d+\.\d%$/);
  });

  it("accepts narwhal's own rows, where unset fields are null", () => {
    const r = row("e0") as unknown as Record<string, unknown>;
    const doc = samples([row("e0")]);
    (doc.engines as Record<string, Record<string, unknown>>).e0.profile = { ...r, colocated_group: null, cached_ttft_a: null, ttft_split: null };
    expect(refitSamples(doc, "s.json", ["e0"]).rows[0].iid).to.equal("e0");
  });

  it("rejects samples that do not cover exactly the fleet, or lack what a refit needs", () => {
    const good = () => samples([row("e0"), row("e1")]);
    const entry = (d: Record<string, unknown>) => (d.engines as Record<string, Record<string, unknown>>).e0;
    rejects(() => refitSamples([], "s.json", ["e0"]), "invalid profile samples: s.json");
    rejects(() => refitSamples(good(), "s.json", ["e0", "e1", "e2"]), "saved profile samples must cover every configured engine");
    rejects(() => refitSamples(good(), "s.json", ["e0"]), "saved profile samples must cover every configured engine");
    let d = good();
    delete entry(d).prefill;
    rejects(() => refitSamples(d, "s.json", ["e0", "e1"]), "e0: saved prefill samples are missing");
    d = good();
    entry(d).prefill = [[256, "slow"]];
    rejects(() => refitSamples(d, "s.json", ["e0", "e1"]), "e0: saved prefill samples are invalid");
    d = good();
    entry(d).profile = { iid: "e0", ttft_a: -1 };
    rejects(() => refitSamples(d, "s.json", ["e0", "e1"]), "e0: saved profile evidence is invalid");
    d = good();
    entry(d).profile = row("e1");
    rejects(() => refitSamples(d, "s.json", ["e0", "e1"]), "e0: saved profile identity differs from the fleet");
    d = good();
    delete entry(d).generation_evidence;
    rejects(() => refitSamples(d, "s.json", ["e0", "e1"]), "e0: saved samples lack generation evidence; reprofile the engine");
    d = good();
    const { generation_digest: _g, ...unbound } = row("e0");
    entry(d).profile = unbound;
    rejects(() => refitSamples(d, "s.json", ["e0", "e1"]), "e0: saved samples lack generation evidence; reprofile the engine");
    d = good();
    entry(d).prefill_block_tokens = 0;
    rejects(() => refitSamples(d, "s.json", ["e0", "e1"]), "e0: saved prefill block size is invalid");
  });

  it("stops on the contract's prefill fit limits, as a live sweep does", () => {
    const d = samples([row("e0")]);
    // One length held back 0.4 s: no quadratic describes it.
    (d.engines as Record<string, Record<string, unknown>>).e0.prefill = prefillSamples().map(([n, t]): [number, number] => [n, n === 1024 ? t + 0.4 : t]);
    let err: unknown;
    try {
      refitSamples(d, "s.json", ["e0"]);
    } catch (e) {
      err = e;
    }
    expect((err as ProfileError).code).to.equal("NARWHAL_PROFILE_PREFILL_FIT");
    expect((err as Error).message).to.match(/^prefill median fit error \d+\.\d%, worst point \d+\.\d%; inspect the retained per-length measurements before using this profile$/);
  });
});

describe("profiling: merge of measured stores", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), "profile-merge-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const mix = (group: string, p: number, d: number, role: "prefill" | "decode"): Partial<ProfileRow> => ({
    colocated_group: group,
    colocated_target_role: role,
    colocated_prefill_engines: p,
    colocated_decode_engines: d,
    colocated_prefill_rps: 0.5,
    colocated_decode_rps: 0.25,
  });

  function source(name: string, rows: ProfileRow[], sidecarRows = rows): MergeSource {
    const storeBytes = documentBytes(storeDocument(rows, {}));
    const samplesBytes = documentBytes(samples(sidecarRows));
    return { path: `/runs/${name}.json`, storeBytes, samplesPath: `/runs/${name}.samples.json`, samplesBytes };
  }

  it("combines role mixes measured apart, recording each source with its SHA-256", () => {
    const a = source("split-1", [row("e0", mix("gpu0", 1, 1, "prefill")), row("e1", mix("gpu0", 1, 1, "decode"))]);
    const b = source("split-2", [row("e0", mix("gpu0", 1, 2, "decode"))]);
    const merged = mergeStores([a, b], ["e0", "e1"]);
    expect(merged.count).to.equal(3);
    expect(merged.rows).to.have.length(3);
    expect(merged.record).to.deep.equal({
      method_version: 3,
      sources: [
        { profiles: "/runs/split-1.json", profiles_sha256: sha256Hex(a.storeBytes!), samples: "/runs/split-1.samples.json", samples_sha256: sha256Hex(a.samplesBytes!) },
        { profiles: "/runs/split-2.json", profiles_sha256: sha256Hex(b.storeBytes!), samples: "/runs/split-2.samples.json", samples_sha256: sha256Hex(b.samplesBytes!) },
      ],
    });
    // narwhal-inference loads the merged store and selects each variant by role split and target role.
    const file = join(dir, "merged.json");
    writeFileSync(file, documentBytes(storeDocument(merged.rows, {})));
    const script = [
      "import json, sys",
      "from pathlib import Path",
      "from narwhal.profiling.store import ProfileStore",
      "from narwhal.types import Role",
      "s = ProfileStore(Path(sys.argv[1]))",
      "print(json.dumps({'n': len(s), 'variants': len(s.all_profiles()), 'diff': s.engine_set_diff(['e0', 'e1']),",
      "  'e0_11': s.get('e0', role_mix=(1, 1), role=Role.PREFILL).colocated_target_role, 'e0_12': s.get('e0', role_mix=(1, 2), role=Role.DECODE).colocated_target_role}))",
    ].join("\n");
    expect(JSON.parse(execFileSync(PYTHON, ["-c", script, file], { encoding: "utf8" }))).to.deep.equal({ n: 2, variants: 3, diff: [[], []], e0_11: "prefill", e0_12: "decode" });
  });

  it("rejects each way the sources fail to describe the fleet once", () => {
    const e0 = () => source("a", [row("e0")]);
    const e1 = () => source("b", [row("e1")]);
    rejects(() => mergeStores([e0()], ["e0"]), "--merge needs at least two measured profile stores");
    rejects(() => mergeStores([{ ...e0(), samplesBytes: undefined }, e1()], ["e0", "e1"]), "missing source measurement sidecar: /runs/a.samples.json");
    rejects(() => mergeStores([{ ...e0(), samplesBytes: Buffer.from("[]") }, e1()], ["e0", "e1"]), "invalid source measurement sidecar: /runs/a.samples.json");
    rejects(() => mergeStores([{ ...e0(), storeBytes: undefined }, e1()], ["e0", "e1"]), "empty source profiles: /runs/a.json");
    rejects(() => mergeStores([e0(), e1()], ["e0"]), "/runs/b.json: profile e1 is outside the fleet");
    rejects(() => mergeStores([source("a", [row("e0")], [row("e0", {}, 2)]), e1()], ["e0", "e1"]), "/runs/a.samples.json: profile e0 lacks matching measurement evidence");
    rejects(() => mergeStores([source("a", [row("e0")], [row("e1")]), e1()], ["e0", "e1"]), "/runs/a.samples.json: profile e0 lacks matching measurement evidence");
    rejects(() => mergeStores([e0(), source("c", [row("e0")])], ["e0"]), "duplicate measured profile variant: ('e0', None, None, None, None)");
    rejects(
      () => mergeStores([source("a", [row("e0", mix("g", 1, 1, "prefill"))]), source("c", [row("e0", mix("g", 1, 1, "prefill"))])], ["e0"]),
      "duplicate measured profile variant: ('e0', 'g', 1, 1, 'prefill')",
    );
    rejects(() => mergeStores([e0(), source("c", [row("e0", mix("g", 1, 1, "prefill"))])], ["e0", "e1", "e2"]), "merged profiles miss fleet engines: e1, e2");
    rejects(() => mergeStores([{ ...e0(), storeBytes: Buffer.from('{"schema":"narwhal.profiles","schema_version":1,"profiles":[],"extra":1}') }, e1()], ["e0", "e1"]), "unknown profile-store field(s): extra");
  });
});
