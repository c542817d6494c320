/**
 * The adoption judgement of a runbook's first-token calibration: a complete file whose processes are the
 * live ones is adopted with the deadline its raw attempts give; every binding that does not hold is
 * named by field (and engine, where one is concerned), and a changed, unpinned or malformed file is
 * refused before anything else is read.
 */
import { expect } from "chai";
import { calibrate, type CalibrationGroup } from "../../../lib/preflight/calibration";
import { judgeCalibration, sha256Of, type AdoptExpectation, type CalibrationAdoptSource } from "../../../lib/preflight/calibration-adopt";
import { identityGenerationDigest } from "../../../lib/profiling/store";

const CONTEXT = 2048;
const START = { e0: 1795975608.104995, e1: 1795975610.8149471 };
const VERSION = "0.29.0";
const PATHS = [
  { producer: "e0", consumer: "e1" },
  { producer: "e1", consumer: "e0" },
];
const LENGTHS = [64, CONTEXT - 1];

/** A deterministic spread of timings so p99 and the maximum differ. */
const timing = (i: number, k: number) => 0.02 + ((i * 37 + k * 11) % 100) / 1000;

function document(over: Record<string, unknown> = {}): Record<string, any> {
  const attempts = LENGTHS.flatMap((n, k) =>
    PATHS.flatMap((p) => Array.from({ length: 100 }, (_, i) => ({ producer: p.producer, consumer: p.consumer, target_input_tokens: n, attempt: i + 1, round: i ? 1 : null, actual_input_tokens: n - 1, prefill_seconds: 0.01 + k / 100, first_token_seconds: timing(i, k), status: "completed" }))),
  );
  const groups: CalibrationGroup[] = LENGTHS.flatMap((n, k) => PATHS.map((p) => ({ ...p, inputTokens: n, firstTokenSeconds: Array.from({ length: 100 }, (_, i) => timing(i, k)), prefillSeconds: [], failures: [] })));
  const floor = calibrate(groups, { routerOverheadS: 0, clientTtftS: 100 }).floor;
  return {
    schema: "narwhal.first-token-calibration",
    schema_version: 1,
    captured_at_unix: 1795975619.56,
    duration_s: 3.8,
    status: "complete",
    model: "tiny",
    contract_fingerprint: null,
    engine_urls: { e0: "http://127.0.0.1:38411", e1: "http://127.0.0.1:40615" },
    generations: { e0: identityGenerationDigest(VERSION, START.e0), e1: identityGenerationDigest(VERSION, START.e1) },
    process_starts: { ...START },
    changed_generations: [],
    generation_errors: [],
    input_tokens: LENGTHS,
    samples_per_group: 100,
    observation_timeout_s: 10,
    configured_deadline_s: 2.5,
    candidate_deadline_s: floor,
    groups: [],
    attempts,
    ...over,
  };
}

function expectation(over: { starts?: Partial<typeof START>; context?: number } = {}): AdoptExpectation {
  const starts = { ...START, ...over.starts };
  return {
    model: "tiny",
    engines: (["e0", "e1"] as const).map((id, i) => ({
      engineId: id,
      url: ["http://127.0.0.1:38411", "http://127.0.0.1:40615"][i],
      maxModelLen: CONTEXT,
      attestationDigest: "sha256:" + "a".repeat(64),
      live: { version: VERSION, processStart: starts[id], maxModelLen: over.context ?? CONTEXT },
    })),
    paths: PATHS,
    samplesPerGroup: 100,
    routerOverheadS: 0.05,
    clientTtftS: 10,
  };
}

const bytesOf = (doc: unknown) => Buffer.from(JSON.stringify(doc, null, 2));
const sourceOf = (bytes: Uint8Array, pinned?: string): CalibrationAdoptSource => ({ path: "/srv/runbook/runs/first-token.json", sha256: sha256Of(bytes), ...(pinned ? { pinned } : {}) });

function judge(doc: unknown, x = expectation(), pinned?: string) {
  const bytes = bytesOf(doc);
  return judgeCalibration(bytes, sourceOf(bytes, pinned), x);
}

function mismatches(doc: unknown, x = expectation()) {
  const r = judge(doc, x);
  if (r.ok) throw new Error("expected a refusal");
  return r.mismatches;
}

describe("preflight: adopting a runbook's first-token calibration", () => {
  it("adopts a complete file of the live processes, with the deadline its raw attempts give", () => {
    const doc = document();
    const bytes = bytesOf(doc);
    const r = judgeCalibration(bytes, sourceOf(bytes, sha256Of(bytes)), expectation());
    if (!r.ok) throw new Error(JSON.stringify(r.mismatches));
    expect(r.adopted.result.floor).to.be.closeTo(doc.candidate_deadline_s, 1e-12);
    expect(r.adopted.result.deadline).to.be.above(r.adopted.result.floor);
    expect(r.adopted.result.groups).to.have.length(4);
    expect(r.adopted.result.groups.every((g) => g.samples === 100)).to.equal(true);
    expect(r.adopted.result.prefillS).to.be.closeTo(0.02, 1e-12);
    expect(r.adopted.completed).to.equal(400);
    expect(r.adopted.capturedAt).to.equal(new Date(1795975619560).toISOString());
    expect(r.adopted.observationBoundS).to.equal(10);
  });

  it("refuses a file that changed since the program read it, or is not the pinned one, naming sha256", () => {
    const bytes = bytesOf(document());
    const changed = judgeCalibration(bytes, { ...sourceOf(bytes), sha256: "sha256:" + "0".repeat(64) }, expectation());
    expect(changed.ok).to.equal(false);
    expect(!changed.ok && changed.mismatches.map((m) => m.field)).to.deep.equal(["sha256"]);
    expect(!changed.ok && changed.mismatches[0].reason).to.match(/changed since the program read it/);
    const pinned = judge(document(), expectation(), "sha256:" + "1".repeat(64));
    expect(!pinned.ok && pinned.mismatches[0]).to.deep.include({ field: "sha256" });
    expect(!pinned.ok && pinned.mismatches[0].reason).to.match(/^\/srv\/runbook\/runs\/first-token\.json is sha256:[0-9a-f]{64}, not the pinned sha256:1{64}$/);
  });

  it("refuses what is not a calibration document, naming schema", () => {
    const notJson = Buffer.from("{");
    const r = judgeCalibration(notJson, sourceOf(notJson), expectation());
    expect(!r.ok && r.mismatches.map((m) => m.field)).to.deep.equal(["schema"]);
    expect(mismatches(document({ schema_version: 2 })).map((m) => m.field)).to.deep.equal(["schema"]);
    expect(mismatches({ schema: "narwhal.profile-store" })[0].reason).to.match(/not a narwhal\.first-token-calibration v1 document/);
  });

  it("names the engine and field of a restarted process: its process start and its generation", () => {
    const ms = mismatches(document(), expectation({ starts: { e1: START.e1 + 40 } }));
    expect(ms.map((m) => [m.engine, m.field])).to.deep.equal([
      ["e1", "process_starts.e1"],
      ["e1", "generations.e1"],
    ]);
    expect(ms[0].reason).to.equal(`e1 was sampled in the process started at ${START.e1}, the live process started at ${START.e1 + 40} (restarted since)`);
    expect(ms[1].reason).to.match(/^e1 was sampled as generation "sha256:[0-9a-f]{64}", the live identity \(version, process start\) gives sha256:[0-9a-f]{64}$/);
  });

  it("binds by the attestation when the file was taken under an engine contract", () => {
    const x = expectation();
    const bound = document({ contract_fingerprint: "sha256:" + "c".repeat(64), generations: { e0: "sha256:" + "a".repeat(64), e1: "sha256:" + "a".repeat(64) } });
    expect(judge(bound, x).ok).to.equal(true);
    x.engines[0].launchDigest = "sha256:" + "d".repeat(64);
    expect(mismatches(bound, x).map((m) => [m.engine, m.field])).to.deep.equal([["e0", "generations.e0"]]);
  });

  it("names the model, the engine addresses, missing and foreign engines", () => {
    expect(mismatches(document({ model: "other" })).map((m) => m.field)).to.deep.equal(["model"]);
    const moved = mismatches(document({ engine_urls: { e0: "http://127.0.0.1:1", e1: "http://127.0.0.1:40615" } }));
    expect(moved.map((m) => [m.engine, m.field])).to.deep.equal([["e0", "engine_urls.e0"]]);
    expect(moved[0].reason).to.equal('e0 was sampled at "http://127.0.0.1:1", the fleet document reaches it at http://127.0.0.1:38411');
    const other = mismatches(document({ engine_urls: { e0: "http://127.0.0.1:38411", e9: "http://127.0.0.1:9" } }));
    expect(other.map((m) => [m.engine, m.field])).to.deep.equal([
      ["e9", "engine_urls"],
      ["e1", "engine_urls"],
    ]);
  });

  it("names a served context other than the launch plan's, and input lengths short of the longest admitted input", () => {
    const ms = mismatches(document(), expectation({ context: 4096 }));
    expect(ms.map((m) => [m.engine, m.field])).to.deep.equal([
      ["e0", "maxModelLen"],
      ["e1", "maxModelLen"],
    ]);
    expect(ms[0].reason).to.equal("e0 serves a context of 4096 tokens, its launch plan 2048");
    const short = mismatches(document({ input_tokens: [64] }));
    expect(short.map((m) => m.field)).to.deep.equal(["input_tokens"]);
    expect(short[0].reason).to.equal("input_tokens [64] do not include the longest admitted input 2047 of the served context 2048");
  });

  it("names an incomplete run, too few samples, and engines that changed while it sampled", () => {
    expect(mismatches(document({ status: "incomplete" })).map((m) => m.field)).to.deep.equal(["status"]);
    expect(mismatches(document({ samples_per_group: 50 })).map((m) => m.field)).to.deep.equal(["samples_per_group"]);
    expect(mismatches(document({ changed_generations: ["e1"], generation_errors: ["e0: timeout"] })).map((m) => m.field)).to.deep.equal(["changed_generations", "generation_errors"]);
    expect(mismatches(document({ captured_at_unix: null })).map((m) => m.field)).to.deep.equal(["captured_at_unix"]);
  });

  it("recomputes from the raw attempts: a failed attempt, a missing path and a summary that disagrees are named", () => {
    const failed = document();
    failed.attempts[5] = { ...failed.attempts[5], status: "observation_expired", first_token_seconds: undefined, error: "TimeoutError" };
    const f = mismatches(failed);
    expect(f.map((m) => m.field)).to.deep.equal(["attempts"]);
    expect(f[0].reason).to.equal("e0 -> e1 at 64 tokens has 99 completed and 1 failed attempts, 100 completed and none failed required");
    const oneWay = document();
    oneWay.attempts = oneWay.attempts.filter((a: { producer: string }) => a.producer === "e0");
    expect(mismatches(oneWay).map((m) => m.reason)).to.deep.equal([
      "e1 -> e0 at 64 tokens has 0 completed and 0 failed attempts, 100 completed and none failed required",
      "e1 -> e0 at 2047 tokens has 0 completed and 0 failed attempts, 100 completed and none failed required",
    ]);
    const edited = mismatches(document({ candidate_deadline_s: 0.2 }));
    expect(edited.map((m) => m.field)).to.deep.equal(["candidate_deadline_s"]);
    // A path this fleet's roles do not permit (e1 pinned to decode) was sampled: not this fleet's calibration.
    const x = { ...expectation(), paths: [PATHS[0]] };
    expect(mismatches(document(), x).map((m) => m.reason)).to.deep.equal(["attempts on e1 -> e0 at 64 tokens, which is not a role-permitted path of this fleet", "attempts on e1 -> e0 at 2047 tokens, which is not a role-permitted path of this fleet"]);
  });
});
