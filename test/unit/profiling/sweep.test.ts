import { expect } from "chai";
import { boundedSweep, DEFAULT_SWEEP, sweepProblems, validateSweep } from "../../../lib/profiling/sweep";
import { limitsDocument, maxNumSeqsOf } from "../../../lib/profiling/limits";
import { ProfileError } from "../../../lib/profiling/errors";

const code = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    return (err as ProfileError).code;
  }
  return "no error";
};

describe("profiling sweep and limits", () => {
  it("has the contract's defaults, which validate", () => {
    expect(DEFAULT_SWEEP.prefillLens).to.deep.equal([256, 512, 1024, 2048, 4096, 8192, 12288, 16384]);
    expect(DEFAULT_SWEEP.decodeInputLens).to.deep.equal([512, 4096, 8192]);
    expect(DEFAULT_SWEEP.decodeConcurrency).to.deep.equal([1, 4, 16, 48]);
    expect([DEFAULT_SWEEP.decodeTokens, DEFAULT_SWEEP.prefillRepeats, DEFAULT_SWEEP.decodeRepeats]).to.deep.equal([64, 3, 1]);
    expect(sweepProblems(DEFAULT_SWEEP)).to.deep.equal([]);
  });

  it("rejects each minimum before anything is measured", () => {
    const bad = (patch: object) => sweepProblems({ ...DEFAULT_SWEEP, ...patch });
    expect(bad({ prefillLens: [256, 256, 512] })[0]).to.match(/three distinct prefill lengths/);
    expect(bad({ decodeInputLens: [512] })[0]).to.match(/two distinct input lengths and two distinct concurrency steps/);
    expect(bad({ decodeConcurrency: [4, 4] })[0]).to.match(/two distinct input lengths and two distinct concurrency steps/);
    expect(bad({ decodeTokens: 2 })[0]).to.match(/decodeTokens needs at least 3/);
    expect(bad({ prefillRepeats: 2 })[0]).to.match(/prefillRepeats needs at least 3/);
    expect(bad({ decodeRepeats: 0 })[0]).to.match(/decodeRepeats needs at least 1/);
    expect(bad({ prefillLens: [0, 256, 512] })[0]).to.match(/prefillLens must be integers of at least 1/);
    expect(code(() => validateSweep({ ...DEFAULT_SWEEP, decodeTokens: 1 }))).to.equal("NARWHAL_PROFILE_SWEEP");
  });

  it("keeps lengths that leave one prefill output token and decodeTokens decode tokens", () => {
    const s = boundedSweep(DEFAULT_SWEEP, 8192);
    // 8192 + 1 does not fit 8192, 4096 + 1 does.
    expect(s.prefillLens).to.deep.equal([256, 512, 1024, 2048, 4096]);
    // 8192 + 64 does not fit; 4096 + 64 does.
    expect(s.decodeInputLens).to.deep.equal([512, 4096]);
    expect(boundedSweep(DEFAULT_SWEEP, 8257).decodeInputLens).to.deep.equal([512, 4096, 8192]);
    expect(boundedSweep(DEFAULT_SWEEP, 8256).decodeInputLens).to.deep.equal([512, 4096]);
  });

  it("stops when max_model_len leaves too few points, with the contract's message", () => {
    expect(() => boundedSweep(DEFAULT_SWEEP, 1024)).to.throw(ProfileError, "max_model_len 1024 leaves too few sweep points; choose shorter --prefill-lens and --decode-input-lens");
    // Three prefill lengths fit 4096 but only one decode input length (512) does.
    expect(code(() => boundedSweep(DEFAULT_SWEEP, 4096))).to.equal("NARWHAL_PROFILE_POINTS");
  });

  it("drops concurrency points above max_num_seqs and adds the limit", () => {
    expect(boundedSweep(DEFAULT_SWEEP, 16385, 8).decodeConcurrency).to.deep.equal([1, 4, 8]);
    // The limit is a candidate already: it is kept once.
    expect(boundedSweep(DEFAULT_SWEEP, 16385, 16).decodeConcurrency).to.deep.equal([1, 4, 16]);
    expect(boundedSweep(DEFAULT_SWEEP, 16385, 48).decodeConcurrency).to.deep.equal([1, 4, 16, 48]);
    expect(boundedSweep(DEFAULT_SWEEP, 16385, 256).decodeConcurrency).to.deep.equal([1, 4, 16, 48]);
    expect(boundedSweep(DEFAULT_SWEEP, 16385).decodeConcurrency).to.deep.equal([1, 4, 16, 48]);
  });

  it("stops when max_num_seqs leaves fewer than two concurrency points", () => {
    expect(() => boundedSweep(DEFAULT_SWEEP, 16385, 1)).to.throw(ProfileError, "max_num_seqs 1 leaves fewer than two decode concurrency points; adjust the engine launch policy before profiling");
    expect(() => boundedSweep({ ...DEFAULT_SWEEP, decodeConcurrency: [4, 16] }, 16385, 2)).to.throw(ProfileError, /max_num_seqs 2 leaves fewer/);
  });

  it("reads max_num_seqs from a plan's argv, last flag winning", () => {
    expect(maxNumSeqsOf(["vllm", "serve", "m", "--max-num-seqs", "8"])).to.equal(8);
    expect(maxNumSeqsOf(["--max-num-seqs", "8", "--max-num-seqs=12"])).to.equal(12);
    expect(maxNumSeqsOf(["vllm", "serve", "m"])).to.equal(undefined);
    expect(() => maxNumSeqsOf(["--max-num-seqs", "many"])).to.throw(ProfileError, /not a positive integer/);
  });

  it("writes the limits document narwhal's --limits reads, naming every engine", () => {
    expect(limitsDocument({ e0: 8, e1: 4 }, ["e0", "e1"])).to.deep.equal({ schema: "narwhal.profiling-limits", schema_version: 1, engines: { e0: 8, e1: 4 } });
    expect(() => limitsDocument({ e0: 8 }, ["e0", "e1"])).to.throw(ProfileError, /engine e1/);
  });
});
