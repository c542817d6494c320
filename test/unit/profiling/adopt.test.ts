/**
 * adoptionFor: a store row is adopted only when its bytes are the ones read, it binds the live
 * generation, and its sidecar entry describes the same row and generation; every refusal says why.
 */
import { expect } from "chai";
import { createHash } from "node:crypto";
import { adoptionFor, type AdoptSource } from "../../../lib/profiling/adopt";
import { adoptedProfile } from "../../../lib/profiling/engine-profile";
import { NARWHAL_FIT_LIMITS } from "../../../lib/profiling/fit-limits";
import { identityGenerationDigest } from "../../../lib/profiling/store";
import { narwhalRow } from "./store-fixture";

const LIVE = identityGenerationDigest("0.29.0", 1795956299.8863);
const OTHER = identityGenerationDigest("0.29.0", 1795956400.25);

function files(edit: { store?: (s: any) => void; samples?: (s: any) => void } = {}) {
  const store: any = { schema: "narwhal.profiles", schema_version: 1, meta: { package: "narwhal-inference", version: "0.7.0" }, profiles: [narwhalRow("e0", LIVE), narwhalRow("e1", OTHER)] };
  const samples: any = {
    method_version: 2,
    engines: {
      e0: { max_model_len: 4096, sweep: { prefill_lens: [256, 512, 1024, 2048], decode_input_lens: [256, 1024], decode_concurrency: [1, 4, 8], decode_tokens: 16, prefill_repeats: 3, decode_repeats: 1 }, generation_evidence: { engine: { version: "0.29.0", process_start_time_seconds: 1795956299.8863 } }, prefill_fit_points: [[256, 0.0183], [2048, 0.1]], prefill_fit_mape: 0.04, profile: narwhalRow("e0", LIVE) },
    },
  };
  edit.store?.(store);
  edit.samples?.(samples);
  const storeBytes = Buffer.from(JSON.stringify(store, null, 2) + "\n");
  const samplesBytes = Buffer.from(JSON.stringify(samples, null, 2) + "\n");
  const digest = (b: Buffer) => "sha256:" + createHash("sha256").update(b).digest("hex");
  const source: AdoptSource = { storePath: "/srv/runbook/runs/profiles.json", storeSha256: digest(storeBytes), samplesPath: "/srv/runbook/runs/profiles.samples.json", samplesSha256: digest(samplesBytes) };
  return { source, storeBytes, samplesBytes };
}

const reasonOf = (engine: string, binding: string, f = files()) => {
  const a = adoptionFor(engine, binding, f.source, f.storeBytes, f.samplesBytes);
  return a.ok ? "adopted" : a.reason;
};

describe("profiling: adoption of an earlier store", () => {
  it("adopts a row that binds the live generation, without narwhal's null fields", () => {
    const f = files();
    const a = adoptionFor("e0", LIVE, f.source, f.storeBytes, f.samplesBytes);
    if (!a.ok) throw new Error(a.reason);
    expect(a.adopted.row).to.not.have.property("kv_capacity_tokens");
    expect(a.adopted.row.generation_digest).to.equal(LIVE);
    expect(a.adopted.entry.profile).to.equal(a.adopted.row);
    expect(a.adopted.sweep).to.deep.equal({ prefillLens: [256, 512, 1024, 2048], decodeInputLens: [256, 1024], decodeConcurrency: [1, 4, 8], decodeTokens: 16, prefillRepeats: 3, decodeRepeats: 1 });
    expect(a.adopted.fitErrors.prefillMape).to.equal(0.04);
    // 256: 1e-8*256^2 + 3e-5*256 + 0.01 = 0.0183354 against 0.0183; 2048: 0.1133830 against 0.1.
    expect(a.adopted.fitErrors.prefillWorstPoint).to.be.closeTo(0.133830, 1e-6);
  });

  it("measures an engine whose row binds another generation", () => {
    expect(reasonOf("e0", OTHER)).to.equal(`its row binds generation ${LIVE}, the live engine binds ${OTHER} (restarted or relaunched since it was measured)`);
  });

  it("refuses files that changed after the program read them", () => {
    const f = files();
    expect(reasonOf("e0", LIVE, { ...f, storeBytes: Buffer.concat([f.storeBytes, Buffer.from(" ")]) })).to.match(/^\/srv\/runbook\/runs\/profiles.json changed since the program read it/);
    expect(reasonOf("e0", LIVE, { ...f, samplesBytes: Buffer.from("{}") })).to.match(/^\/srv\/runbook\/runs\/profiles.samples.json changed since the program read it/);
  });

  it("refuses a row the sidecar does not describe, or binds otherwise", () => {
    expect(reasonOf("e0", LIVE, files({ samples: (s) => (s.engines.e0.profile.ttft_a = 2e-8) }))).to.equal("/srv/runbook/runs/profiles.samples.json's entry for e0 describes another profile than the store's row");
    expect(reasonOf("e0", LIVE, files({ samples: (s) => (s.engines.e0.generation_evidence.engine.process_start_time_seconds = 1795956400.25) }))).to.equal(
      `/srv/runbook/runs/profiles.samples.json's generation evidence for e0 binds ${OTHER}, not the live ${LIVE}`,
    );
    expect(reasonOf("e1", OTHER)).to.equal("/srv/runbook/runs/profiles.samples.json has no entry for engine e1: the row has no raw observations behind it");
  });

  it("refuses rows this program's store cannot carry, and engines the store lacks", () => {
    expect(reasonOf("e0", LIVE, files({ store: (s) => (s.profiles[0].colocated_group = "gpu0") }))).to.match(/uses colocated_group, which this program's store does not carry/);
    expect(reasonOf("e0", LIVE, files({ store: (s) => s.profiles.push({ ...s.profiles[0] }) }))).to.match(/has 2 rows for engine e0 \(role-mix variants\)/);
    expect(reasonOf("e0", LIVE, files({ store: (s) => (s.profiles[0].decode_cv_mape = -1) }))).to.match(/decode_cv_mape must be nonnegative/);
    expect(reasonOf("e7", LIVE)).to.equal("/srv/runbook/runs/profiles.json has no row for engine e7");
  });
});

describe("profiling: the adopted profile", () => {
  const WRITTEN = "2026-01-02T03:04:05.000Z";
  const adopt = (limits = NARWHAL_FIT_LIMITS, f = files()) => adoptedProfile("e0", LIVE, f.source, { store: f.storeBytes, samples: f.samplesBytes, writtenAt: WRITTEN }, limits);

  it("dates an adopted row when its store was written and records why it was adopted", () => {
    const a = adopt();
    if (a.reason !== undefined) throw new Error(a.reason);
    const reason = `row of /srv/runbook/runs/profiles.json binds the live generation ${LIVE}`;
    expect(a.facts).to.include({ measuredAt: WRITTEN, wallSeconds: 0, bindingDigest: LIVE });
    expect(a.facts.adoption).to.deep.equal({ verdict: "adopted", reason, source: files().source });
    expect(a.observations.adopted).to.include({ storeWrittenAt: WRITTEN, reason });
    expect(a.entry.profile).to.equal(a.facts.row);
  });

  it("measures instead a row over the preflight's limits, or one that binds another generation", () => {
    expect(adopt({ maxDecodeFitMape: 0.001, maxDecodeCvMape: 0.13 }).reason).to.match(/^the row of \/srv\/runbook\/runs\/profiles.json fails the preflight.s profile limits: /);
    expect(adoptedProfile("e0", OTHER, files().source, { store: files().storeBytes, samples: files().samplesBytes, writtenAt: WRITTEN }, NARWHAL_FIT_LIMITS).reason).to.equal(reasonOf("e0", OTHER));
  });
});

describe("profile provider: the adopt input", () => {
  // Loaded here so the check runs exactly as the provider's check method runs it.
  const { inputFailures } = require("../../../dynamic-providers/profile/provider") as typeof import("../../../dynamic-providers/profile/provider");
  const adoptFailures = (adopt: unknown) => inputFailures({ adopt }).filter((f) => f.property === "adopt");

  it("accepts absolute paths with sha256 digests, and refuses anything else before the engine is touched", () => {
    const { source } = files();
    expect(adoptFailures(source)).to.deep.equal([]);
    expect(adoptFailures({ ...source, storePath: "runs/profiles.json" })).to.have.length(1);
    expect(adoptFailures({ ...source, samplesSha256: "abc" })[0].reason).to.match(/^adopt must name the store to adopt as \{storePath, storeSha256, samplesPath, samplesSha256\}/);
    expect(adoptFailures(null)).to.have.length(1);
  });
});
