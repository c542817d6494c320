import { expect } from "chai";
import { decodeCrossValidationMape, decodeMape, fitDecodePlane, fitPrefill, fitPrefillMedians, fitQuadratic } from "../../../lib/profiling/fit";
import { ProfileError } from "../../../lib/profiling/errors";

/** A deterministic jitter in [-amp, amp], so the tests are repeatable. */
function jitter(seed: number, amp: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return (x / 2 ** 31 - 0.5) * 2 * amp;
  };
}

const close = (got: number, want: number, rel: number) => expect(Math.abs(got - want), `${got} vs ${want}`).to.be.at.most(Math.abs(want) * rel);

describe("profiling fits", () => {
  // Narwhal's stub-fleet coefficients (the simulator's defaults).
  const A = 2e-8, B = 6e-5, C = 0.005;
  const lens = [256, 512, 1024, 2048, 4096, 8192, 12288, 16384];

  it("recovers a quadratic prefill curve exactly from noiseless medians", () => {
    const [a, b, c] = fitQuadratic(lens.map((n) => [n, A * n * n + B * n + C] as const));
    close(a, A, 1e-9);
    close(b, B, 1e-9);
    close(c, C, 1e-6);
  });

  it("recovers prefill coefficients within 5% from repeats with 2% noise, fitting each length's median", () => {
    const noise = jitter(7, 0.02);
    const samples = lens.flatMap((n) => [0, 1, 2].map(() => [n, (A * n * n + B * n + C) * (1 + noise())] as [number, number]));
    // One wild repeat per length: the median ignores it.
    samples.push(...lens.map((n) => [n, 10] as [number, number]));
    const fit = fitPrefill(samples);
    close(fit.a, A, 0.05);
    close(fit.b, B, 0.05);
    expect(fit.representatives).to.have.length(lens.length);
    expect(fit.mape).to.be.below(0.03);
  });

  it("stops on a representative fit above 20% mean error, with the contract's message", () => {
    // A curve that falls then rises cannot be a non-negative quadratic.
    const bad = [256, 512, 1024, 2048].flatMap((n, i) => [0, 1, 2].map(() => [n, [1, 0.1, 1, 0.1][i]] as [number, number]));
    expect(() => fitPrefill(bad)).to.throw(ProfileError, /^prefill median fit error \d+\.\d%, worst point \d+\.\d%; inspect the retained per-length measurements before using this profile$/);
  });

  it("stops on a worst point above 50% even when the mean error is under 20%", () => {
    const n = [256, 512, 1024, 2048, 4096, 8192, 12288, 16384, 20000, 24000];
    const samples = n.map((x, i) => [x, B * x + C + (i === 0 ? 0.05 : 0)] as [number, number]);
    const fit = fitPrefillMedians(samples);
    expect(fit.mape).to.be.at.most(0.2);
    expect(fit.worst).to.be.above(0.5);
    try {
      fitPrefill(samples);
      expect.fail("no stop");
    } catch (err) {
      expect((err as ProfileError).code).to.equal("NARWHAL_PROFILE_PREFILL_FIT");
    }
  });

  it("needs three distinct prefill lengths", () => {
    expect(() => fitQuadratic([[1, 1], [1, 2], [2, 3]])).to.throw(/three distinct input lengths/);
  });

  it("recovers a decode plane from 1% noise: slopes within 3%, base within 1 ms", () => {
    const K = 3e-6, R = 0.002, Z = 0.012;
    const noise = jitter(3, 0.01);
    const points = [512, 4096, 8192].flatMap((isl) => [1, 4, 16, 48].map((q) => [q, q * (isl + 32), (Z + K * q * (isl + 32) + R * q) * (1 + noise())] as [number, number, number]));
    const plane = fitDecodePlane(points);
    close(plane.kvSlope, K, 0.03);
    close(plane.requestSlope, R, 0.03);
    // 1% of the largest point (48 streams of 8k tokens, ~1.2 s) is far more than the base itself.
    expect(Math.abs(plane.intercept - Z)).to.be.below(0.001);
    expect(decodeMape(points, plane)).to.be.below(0.015);
    expect(decodeCrossValidationMape(points)).to.be.a("number").and.below(0.03);
  });

  it("refuses a decode sweep whose axes cannot be told apart", () => {
    // Every point has kv = 100·requests: the two slopes are not identifiable.
    const points = [1, 2, 4, 8].map((q) => [q, 100 * q, 0.01 + 0.001 * q] as [number, number, number]);
    expect(() => fitDecodePlane(points)).to.throw(ProfileError, /degenerate/);
  });

  it("has no cross-validation error below four points", () => {
    expect(decodeCrossValidationMape([[1, 10, 1], [2, 30, 2], [4, 10, 3]])).to.equal(null);
  });
});
