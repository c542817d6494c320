import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { attestationBindingDigest, buildRow, documentBytes, identityGenerationDigest, idsProblem, rowProblem, samplesPath, storeDocument } from "../../../lib/profiling/store";
import { fitDecodePlane, fitPrefill, type DecodePoint } from "../../../lib/profiling/fit";
import { previousInLane, profileLanes } from "../../../lib/profiling/lanes";
import { ProfileError } from "../../../lib/profiling/errors";

const PYTHON = resolve(__dirname, "../../../.tools/venv/bin/python");
const DIGEST = "sha256:" + "ab".repeat(32);

function row(iid: string) {
  const prefill = [256, 1024, 4096].flatMap((n) => [0, 1, 2].map(() => [n, 2e-8 * n * n + 6e-5 * n + 0.005] as [number, number]));
  const points: DecodePoint[] = [512, 4096].flatMap((isl) => [1, 4].map((q) => [q, q * isl, 0.012 + 3e-6 * q * isl + 0.002 * q] as DecodePoint));
  return buildRow({
    iid,
    generationDigest: DIGEST,
    prefill: fitPrefill(prefill),
    prefillSamples: prefill,
    blockTokens: 16,
    decode: fitDecodePlane(points),
    decodePoints: points,
    decodeFitMape: 0.01,
    decodeCvMape: 0.02,
    kvCapacityTokens: 100000,
    decodeMaxOutputTokens: 64,
  });
}

describe("profile store", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), "profile-store-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("derives the sidecar path the way narwhal does", () => {
    expect(samplesPath("/srv/router/runs/profiles.json")).to.equal("/srv/router/runs/profiles.samples.json");
    expect(samplesPath("runs/profiles")).to.equal("runs/profiles.samples.json");
    expect(samplesPath("runs.d/p.v1.json")).to.equal("runs.d/p.v1.samples.json");
  });

  it("builds rows with the measured domain", () => {
    const r = row("e0");
    expect([r.prefill_min_tokens, r.prefill_max_tokens]).to.deep.equal([256, 4096]);
    expect([r.decode_min_requests, r.decode_max_requests, r.decode_min_kv_tokens, r.decode_max_kv_tokens]).to.deep.equal([1, 4, 512, 16384]);
    expect(r.generation_digest).to.equal(DIGEST);
  });

  it("loads in narwhal-inference's own ProfileStore, which reads back every coefficient", () => {
    const rows = [row("e1"), row("e0")];
    const file = join(dir, "profiles.json");
    writeFileSync(file, documentBytes(storeDocument(rows, { package: "narwhal-fleet" })));
    const script = [
      "import json, sys",
      "from pathlib import Path",
      "from narwhal.profiling.store import ProfileStore",
      "from narwhal.profiling.model import decode_evidence_problems",
      "s = ProfileStore(Path(sys.argv[1]))",
      "print(json.dumps({'n': len(s), 'diff': s.engine_set_diff(['e0', 'e1']), 'a': s.get('e0').ttft_a, 'gen': s.get('e1').generation_digest,",
      "  'problems': decode_evidence_problems(s.get('e0'), max_fit_mape=0.05, max_cv_mape=0.13)}))",
    ].join("\n");
    const out = JSON.parse(execFileSync(PYTHON, ["-c", script, file], { encoding: "utf8" })) as Record<string, unknown>;
    expect(out).to.deep.equal({ n: 2, diff: [[], []], a: rows[1].ttft_a, gen: DIGEST, problems: [] });
  });

  it("refuses rows narwhal's loader would refuse, and duplicate ids", () => {
    expect(rowProblem({ ...row("e0"), generation_digest: "abc" })).to.equal("profile e0: generation_digest must be a sha256 digest");
    expect(rowProblem({ ...row("e0"), ttft_a: -1 })).to.equal("profile e0: ttft_a must be nonnegative");
    expect(rowProblem({ ...row("e0"), surprise: 1 })).to.equal("profile e0: unknown profile field(s): surprise");
    expect(() => storeDocument([row("e0"), row("e0")], {})).to.throw(ProfileError, /duplicate profile id "e0"/);
  });

  it("says which ids do not match the fleet", () => {
    expect(idsProblem([{ iid: "e0" }, { iid: "e9" }], ["e0", "e1"])).to.equal("profile ids must match the fleet's engines: missing e1; not in the fleet e9");
    expect(idsProblem([{ iid: "e0" }], ["e0"])).to.equal(undefined);
  });

  it("binds rows to narwhal's generation digests", () => {
    expect(attestationBindingDigest("sha256:a", "sha256:l")).to.equal("sha256:l");
    expect(attestationBindingDigest("sha256:a", null)).to.equal("sha256:a");
    // narwhal: canonical_digest({"engine": {"version": "0.29.0", "process_start_time_seconds": 1754000000.0}})
    const script = "from narwhal.contracts import canonical_digest; print(canonical_digest({'engine': {'version': '0.29.0', 'process_start_time_seconds': 1754000000.0}}), canonical_digest({'engine': {'version': '0.29.0', 'process_start_time_seconds': 1754000000.25}}))";
    const [whole, frac] = execFileSync(PYTHON, ["-c", script], { encoding: "utf8" }).trim().split(" ");
    expect(identityGenerationDigest("0.29.0", 1754000000)).to.equal(whole);
    expect(identityGenerationDigest("0.29.0", 1754000000.25)).to.equal(frac);
  });

  it("profiles engines sharing a GPU one after another and the rest side by side", () => {
    const engines = [
      { id: "a0", host: "h1", gpuIds: [0] },
      { id: "a1", host: "h1", gpuIds: [1] },
      { id: "a2", host: "h1", gpuIds: [0, 2] },
      { id: "b0", host: "h2", gpuIds: [0] },
      { id: "a3", host: "h1", gpuIds: [2] },
    ];
    expect(profileLanes(engines)).to.deep.equal([["a0", "a2", "a3"], ["a1"], ["b0"]]);
    expect([...previousInLane(engines)]).to.deep.equal([["a0", undefined], ["a2", "a0"], ["a3", "a2"], ["a1", undefined], ["b0", undefined]]);
    // An engine that sees every GPU shares with everything on its host.
    expect(profileLanes([{ id: "x", host: "h", gpuIds: [] }, { id: "y", host: "h", gpuIds: [3] }])).to.deep.equal([["x", "y"]]);
  });
});
