/** `trial`: points parse with their defaults, and a point is refused by field before anything runs. */
import { expect } from "chai";
import { accepted, minimal, rejectsEach, variant } from "./fixtures";

const point = (over: Record<string, unknown> = {}) => ({ id: "low", rate: 2, requests: 20, mix: [{ promptTokens: 512, outputTokens: 32 }], ...over });

describe("config: trial", () => {
  it("defaults a point's arrival, seed and class weight", () => {
    const spec = accepted(variant((c) => (c.trial = { points: [point()] })));
    expect(spec.trial.points).to.deep.equal([{ id: "low", rate: 2, requests: 20, arrival: "poisson", seed: 0, mix: [{ promptTokens: 512, outputTokens: 32, weight: 1 }] }]);
  });

  it("runs no point unless one is configured", () => {
    expect(accepted(minimal()).trial.points).to.deep.equal([]);
  });

  rejectsEach([
    { name: "a point named twice", edit: (c) => (c.trial = { points: [point(), point()] }), issues: [["trial.points[1].id", '"low" is already the id of trial.points[0]; point ids must be unique']] },
    { name: "a zero rate", edit: (c) => (c.trial = { points: [point({ rate: 0 })] }), issues: [["trial.points[0].rate", "found 0; allowed: a positive number (requests per second)"]] },
    {
      name: "a prompt outside the prefill sweep",
      edit: (c) => (c.trial = { points: [point({ mix: [{ promptTokens: 100, outputTokens: 32 }] })] }),
      issues: [["trial.points[0].mix[0].promptTokens", "found 100, outside the profiled prompt range [256, 16384] (profiling.prefillLens); choose a length within it or profile a wider sweep"]],
    },
    {
      name: "a request longer than the served context",
      edit: (c) => ((c.launch = { maxModelLen: 1024 }), (c.profiling = { prefillLens: [256, 512, 1000] }), (c.trial = { points: [point({ mix: [{ promptTokens: 1000, outputTokens: 32 }] })] })),
      issues: [["trial.points[0].mix[0].outputTokens", "prompt 1000 + output 32 tokens exceed launch.maxModelLen 1024"]],
    },
    { name: "an empty mix", edit: (c) => (c.trial = { points: [point({ mix: [] })] }), issues: [["trial.points[0].mix", "found an empty list; expected a list of {promptTokens, outputTokens, weight} with at least 1"]] },
  ]);
});
