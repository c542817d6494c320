/**
 * A profile taken while the machine that times it is busy: three CPU loops beside one engine simulator on
 * a machine of few cores (the load other work put on the machine where a five-engine stack's first `up`
 * once needed six tries). The Profile provider gauges the machine's contention for every sample, takes
 * again what was measured while the machine was stalled, and the profile is accepted within the default
 * settings (Narwhal's limits, the default number of tries); the evidence shows the re-takes and the
 * contention, and the row's figures are the fits over the kept samples only.
 */
import { expect } from "chai";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { measureProfile } from "../../dynamic-providers/profile/provider";
import type { ProfileInputs } from "../../dynamic-providers/profile/schema";
import { decodeMape, fitDecodePlane, fitPrefillMedians, type DecodePoint } from "../../lib/profiling/fit";
import { DISTURBED_LATENESS, RETAKES_PER_PHASE_SAMPLE, RETAKES_PER_SAMPLE, type ResampleSummary } from "../../lib/profiling/resample";
import { DEFAULT_SWEEP, type Sweep } from "../../lib/profiling/sweep";
import { makeModel, removeTemps, ROOT, startEngine, stopAll } from "../unit/sim-engine/helpers";
import { profileInputs, provedEngine } from "./support/profiled-engine";

const STACK = "provider-tests";
const API_KEY = "sk-narwhal-profile-busy-8d21c4";
const ARGS = ["--served-model-name", "tiny", "--api-key", API_KEY, "--max-model-len", "4096", "--max-num-seqs", "8", "--no-enable-prefix-caching"];
/** The e2e stacks' sweep (test/e2e/support/stack.ts PROFILING) at their time scale. */
const SWEEP: Sweep = { ...DEFAULT_SWEEP, prefillRepeats: 3, prefillLens: [256, 1024, 2048], decodeInputLens: [512, 1024, 2048], decodeConcurrency: [1, 4] };
const TIME_SCALE = 0.5;
const BUSY_LOOPS = 3;

describe("providers: a profile on a busy machine re-takes the samples the machine disturbed", function () {
  this.timeout(600_000);
  let inputs: ProfileInputs;
  const loops: ChildProcess[] = [];

  before(async () => {
    const engine = await startEngine({ model: makeModel({}), args: ARGS, sim: { timeScale: TIME_SCALE, startupDelayS: 0 } });
    const g = await provedEngine("e0", engine, { apiKey: API_KEY, planSha256: "sha256:" + "d8".repeat(32) });
    inputs = profileInputs("e0", g, { apiKey: API_KEY, sweep: SWEEP, stack: STACK });
    for (let i = 0; i < BUSY_LOOPS; i++) loops.push(spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" }));
  });

  after(async () => {
    for (const l of loops) l.kill("SIGKILL");
    await stopAll();
    removeTemps();
  });

  it("is accepted within the default tries and Narwhal's limits, its evidence showing the re-takes and the contention", async () => {
    const lines: string[] = [];
    const p = await measureProfile(inputs, (l) => lines.push(l));
    for (const t of p.fitTries) console.log(`      try ${t.attempt}: fit ${JSON.stringify(t.fitErrors)} ${JSON.stringify(t.resampled)}`);
    // Accepted (measureProfile rejects otherwise) with Narwhal's limits and the default tries.
    expect(p.fitTries.length).to.be.within(1, 3);
    const records = p.fitTries.map((t) => JSON.parse(fs.readFileSync(path.join(ROOT, "runs", STACK, "evidence", t.evidence!.relativePath), "utf8")));
    const resampled = records.map((r) => r.observations.resampled as ResampleSummary);
    const samples = SWEEP.prefillLens.length * SWEEP.prefillRepeats + SWEEP.decodeInputLens.length * SWEEP.decodeConcurrency.length * SWEEP.decodeRepeats;
    for (const r of resampled) {
      expect(r.budget).to.equal(RETAKES_PER_PHASE_SAMPLE * samples);
      expect(r.retaken).to.be.at.most(r.budget);
      expect(r.points.reduce((n, x) => n + x.lateness.length - 1, 0)).to.equal(r.retaken);
      for (const x of r.points) {
        // Only a disturbed take is taken again, at most RETAKES_PER_SAMPLE times, and the least late take is kept.
        expect(x.lateness.slice(0, -1).every((l) => l > DISTURBED_LATENESS), `${x.point}: every take but the last was disturbed (${x.lateness.join(", ")})`).to.equal(true);
        expect(x.lateness.length).to.be.at.most(1 + RETAKES_PER_SAMPLE);
        expect(x.lateness[x.kept]).to.equal(Math.min(...x.lateness));
        // PSI is read where the kernel has it: every take then carries the machine's pressure.
        if (r.peakPressure !== null) expect(x.pressure.every((p) => p !== null && p >= 0 && p <= 1), `${x.point}: every take's pressure (${x.pressure.join(", ")})`).to.equal(true);
      }
      // One kept sample per point of the sweep, however often it was taken.
      expect(r.samples).to.equal(samples);
    }
    // Three loops beside the profile usually delay its timers, by how much the scheduler decides: whatever
    // it did, a sweep re-took samples exactly when one of them ran late.
    for (const r of resampled) {
      expect(r.disturbed > 0, "a sample ran late exactly when a take was over the threshold").to.equal(r.peakLateness > r.threshold);
      expect(r.retaken > 0, "a late sample was taken again").to.equal(r.disturbed > 0);
    }
    console.log(`      re-takes over the tries: ${resampled.reduce((n, r) => n + r.retaken, 0)}`);

    // The row is the fits over the kept samples: each prefill length has its repeats, each decode point one cohort.
    const accepted = records[records.length - 1];
    const entry = JSON.parse(fs.readFileSync(path.join(ROOT, "runs", STACK, "evidence", accepted.artifacts[0].relativePath), "utf8"));
    expect(entry.prefill).to.have.length(SWEEP.prefillLens.length * SWEEP.prefillRepeats);
    expect(entry.decode_intervals).to.have.length(SWEEP.decodeInputLens.length * SWEEP.decodeConcurrency.length);
    const prefill = fitPrefillMedians(entry.prefill, entry.prefill_block_tokens);
    expect(prefill.mape).to.be.closeTo(p.fitErrors.prefillMape, 1e-12);
    const plane = fitDecodePlane(entry.decode as DecodePoint[]);
    expect(decodeMape(entry.decode, plane)).to.be.closeTo(p.row.decode_fit_mape, 1e-12);
    expect(entry).to.not.have.property("resampled");
  });
});
