import { expect } from "chai";
import { arrivalSchedule } from "../../../lib/trial/schedule";
import { PROMPT_ID_FLOOR, promptIds } from "../../../lib/trial/prompt";
import type { TrialPoint } from "../../../lib/trial/types";

const point = (over: Partial<TrialPoint> = {}): TrialPoint => ({
  id: "p1",
  rate: 10,
  requests: 200,
  arrival: "poisson",
  seed: 7,
  mix: [{ promptTokens: 128, outputTokens: 16, weight: 1 }],
  ...over,
});

describe("trial: arrival schedule", () => {
  it("is the same for the same point and different for another seed", () => {
    expect(arrivalSchedule(point())).to.deep.equal(arrivalSchedule(point()));
    expect(arrivalSchedule(point({ seed: 8 })).map((r) => r.dueS)).to.not.deep.equal(arrivalSchedule(point()).map((r) => r.dueS));
  });

  it("puts the last request at exactly N / rate, the first one gap after the start, in order", () => {
    for (const arrival of ["poisson", "constant"] as const) {
      const s = arrivalSchedule(point({ arrival, requests: 137, rate: 3.5 }));
      expect(s).to.have.length(137);
      expect(s[136].dueS).to.equal(137 / 3.5);
      expect(s[0].dueS).to.be.greaterThan(0);
      s.forEach((r, i) => expect(r.index).to.equal(i));
      for (let i = 1; i < s.length; i++) expect(s[i].dueS).to.be.at.least(s[i - 1].dueS);
    }
  });

  it("spaces constant arrivals exactly 1 / rate apart, starting at 1 / rate", () => {
    const s = arrivalSchedule(point({ arrival: "constant", requests: 5, rate: 4 }));
    expect(s.map((r) => r.dueS)).to.deep.equal([0.25, 0.5, 0.75, 1, 1.25]);
  });

  it("draws Poisson gaps: exponential (coefficient of variation near 1) and evenly spread over the span", () => {
    const n = 20000;
    const s = arrivalSchedule(point({ requests: n, rate: 50 }));
    const gaps = s.map((r, i) => r.dueS - (i === 0 ? 0 : s[i - 1].dueS));
    const mean = gaps.reduce((a, b) => a + b, 0) / n;
    const sd = Math.sqrt(gaps.reduce((a, g) => a + (g - mean) ** 2, 0) / n);
    expect(mean).to.be.closeTo(1 / 50, 1e-9);
    expect(sd / mean).to.be.closeTo(1, 0.03);
    // Poisson counts: the first half of the span holds n/2 arrivals, within 4 standard deviations (sqrt(n/2) ~ 100).
    const firstHalf = s.filter((r) => r.dueS < n / 50 / 2).length;
    expect(firstHalf).to.be.closeTo(n / 2, 400);
  });

  it("draws the workload classes by weight, and the same classes for either arrival kind", () => {
    const mix = [
      { promptTokens: 100, outputTokens: 10, weight: 1 },
      { promptTokens: 300, outputTokens: 30, weight: 2 },
      { promptTokens: 400, outputTokens: 40, weight: 7 },
    ];
    const n = 20000;
    const s = arrivalSchedule(point({ requests: n, mix }));
    const share = (p: number) => s.filter((r) => r.promptTokens === p).length / n;
    expect(share(100)).to.be.closeTo(0.1, 0.015);
    expect(share(300)).to.be.closeTo(0.2, 0.015);
    expect(share(400)).to.be.closeTo(0.7, 0.015);
    s.forEach((r) => expect(r.outputTokens * 10).to.equal(r.promptTokens));
    const constant = arrivalSchedule(point({ requests: n, mix, arrival: "constant" }));
    expect(constant.map((r) => r.promptTokens)).to.deep.equal(s.map((r) => r.promptTokens));
  });

  it("refuses a point it cannot schedule, naming the field", () => {
    expect(() => arrivalSchedule(point({ rate: 0 }))).to.throw('trial point "p1": point.rate must be a positive number of requests per second, got 0');
    expect(() => arrivalSchedule(point({ requests: 2.5 }))).to.throw('trial point "p1": point.requests must be a positive integer, got 2.5');
    expect(() => arrivalSchedule(point({ mix: [{ promptTokens: 1, outputTokens: 1, weight: 0 }] }))).to.throw('trial point "p1": point.mix[0].weight must be a positive number, got 0');
    expect(() => arrivalSchedule(point({ mix: [{ promptTokens: 0, outputTokens: 1, weight: 1 }] }))).to.throw("point.mix[0].promptTokens must be a positive integer, got 0");
  });

});

describe("trial: prompts", () => {
  it("has exactly n ids, all in [100, vocabSize), the same for the same request", () => {
    for (const n of [1, 2, 3, 17, 4096]) {
      const ids = promptIds(n, 1000, "run-a-", 5);
      expect(ids).to.have.length(n);
      ids.forEach((id) => expect(id).to.be.within(PROMPT_ID_FLOOR, 999).and.satisfy(Number.isInteger));
      expect(promptIds(n, 1000, "run-a-", 5)).to.deep.equal(ids);
    }
  });

  it("gives no two requests of a run, nor the same request of two runs, the same first block", () => {
    const firstBlock = (salt: string, i: number) => promptIds(64, 32000, salt, i).slice(0, 16).join(",");
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) seen.add(firstBlock("run-a-", i));
    expect(seen.size).to.equal(5000);
    expect(firstBlock("run-b-", 3)).to.not.equal(firstBlock("run-a-", 3));
  });

  it("refuses a vocabulary too small to draw from", () => {
    expect(() => promptIds(4, 100, "x", 0)).to.throw("vocabSize is 100; it must be a whole number above 101");
  });
});
