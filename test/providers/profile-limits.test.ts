/**
 * The Profile provider holds each sweep to the preflight's fit limits, against one engine simulator on
 * 127.0.0.1 over real HTTP: with a limit of zero, which no measured fit meets (the simulator paces decode
 * by its formula, so on an idle machine a decode fit came within 1e-6 of exact: 5.7e-7 passed the 1e-6 this
 * test once used), create measures again up to `fitAttempts`, keeps every sweep as its own evidence record (verdict fail, the figure in its reasons), then rejects
 * with a first line naming the engine, the figure, its value and the limit; a fit within the limits is
 * accepted and listed as the only try. A small sweep keeps it cheap; the e2e time scale and 64 decode
 * tokens keep its cohorts overlapping and its fits well within the limits on a loaded machine.
 */
import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { measureProfile } from "../../dynamic-providers/profile/provider";
import type { ProfileInputs } from "../../dynamic-providers/profile/schema";
import { ProfileError } from "../../lib/profiling/errors";
import type { Sweep } from "../../lib/profiling/sweep";
import { makeModel, removeTemps, ROOT, startEngine, stopAll } from "../unit/sim-engine/helpers";
import { profileInputs, provedEngine } from "./support/profiled-engine";

const STACK = "provider-tests";
const API_KEY = "sk-narwhal-profile-limits-3b7f20";
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--max-model-len", "4096", "--max-num-seqs", "8", "--no-enable-prefix-caching"];
const SWEEP: Sweep = { prefillLens: [256, 1024, 2048], decodeInputLens: [256, 1024], decodeConcurrency: [1, 4], decodeTokens: 64, prefillRepeats: 3, decodeRepeats: 1 };

describe("providers: Profile accepts only a fit the preflight accepts", function () {
  this.timeout(180_000);
  let inputs: ProfileInputs;

  before(async () => {
    const engine = await startEngine({ model: makeModel({}), args: ARGS, sim: { timeScale: 0.5, startupDelayS: 0 } });
    const g = await provedEngine("e0", engine, { apiKey: API_KEY, planSha256: "sha256:" + "c4".repeat(32) });
    inputs = profileInputs("e0", g, { apiKey: API_KEY, sweep: SWEEP, stack: STACK });
  });

  after(async () => {
    await stopAll();
    removeTemps();
  });

  it("a fit over the limit is measured again, each try kept, then create fails naming engine, figure, value and limit", async () => {
    const lines: string[] = [];
    let err: ProfileError | undefined;
    await measureProfile({ ...inputs, fitLimits: { maxDecodeFitMape: 0, maxDecodeCvMape: 5 }, fitAttempts: 2 }, (l) => lines.push(l)).catch((e: ProfileError) => (err = e));
    expect(err, "create must fail").to.be.instanceOf(Error);
    expect(err!.code).to.equal("NARWHAL_PROFILE_LIMIT");
    const [first, ...rest] = err!.message.split("\n");
    console.log(`      ${first.slice(0, 160)}…`);
    // Each try says what the machine did to its samples; re-takes are counted apart from the tries.
    const m = /^engine e0: decode_fit_mape (\d\.\d{4}) exceeds the limit 0 after 2 tries and (\d+) re-taken samples? \(try 1: decode_fit_mape \d\.\d{4} > 0, (.+?); try 2: decode_fit_mape \1 > 0, (.+?)\); the preflight's profile gate would reject this profile\. Re-run `pulumi up` /.exec(first);
    expect(m, first).to.not.equal(null);
    const retakes = [m![3], m![4]].map((b) => /^(\d+) samples? re-taken \(/.exec(b)?.[1] ?? (b.startsWith("no sample re-taken (") ? "0" : "?"));
    expect(Number(m![2])).to.equal(Number(retakes[0]) + Number(retakes[1]));
    expect(lines.filter((l) => /^engine e0: try 1 over the preflight's limits/.test(l))).to.have.length(1);
    // Both sweeps are evidence: each a record whose verdict names the figure.
    const kept = /^every try is kept as evidence: (.+)$/.exec(rest.find((l) => l.startsWith("every try")) ?? "")![1].split(", ");
    expect(kept).to.have.length(2);
    for (const [n, rel] of kept.entries()) {
      const rec = JSON.parse(fs.readFileSync(path.join(ROOT, "runs", STACK, "evidence", rel), "utf8"));
      expect(rec.verdict.status).to.equal("fail");
      expect(rec.verdict.reasons[0]).to.match(/^e0 decode_fit_mape \d\.\d{4} exceeds the profile-validation limit 0$/);
      expect(rec.observations.attempt).to.equal(n + 1);
      expect(rec.observations.resampled.samples).to.equal(SWEEP.prefillLens.length * SWEEP.prefillRepeats + SWEEP.decodeInputLens.length * SWEEP.decodeConcurrency.length * SWEEP.decodeRepeats);
      expect(JSON.stringify(rec)).to.not.include(API_KEY);
    }
  });

  it("a fit within the limits is accepted at once and is the only try", async () => {
    // Limits this small sweep always meets: the point is the accepting path, not the simulator's noise
    // (profile.test.ts holds a full sweep to Narwhal's own limits).
    const loose = { maxDecodeFitMape: 0.9, maxDecodeCvMape: 5 };
    const p = await measureProfile({ ...inputs, fitLimits: loose, fitAttempts: 3 });
    console.log(`      fit errors ${JSON.stringify(p.fitErrors)}, ${p.fitTries.length} try(s)`);
    expect(p.fitTries.map((t) => [t.attempt, t.problems])).to.deep.equal([[1, []]]);
    expect(p.fitTries[0].evidence).to.deep.equal(p.evidence);
    expect(p.row.decode_fit_mape).to.be.at.most(loose.maxDecodeFitMape);
  });
});
