/** `npm run trial`: its arguments, the point it takes from the stack's state, and the demo's capacity lines. */
import { expect } from "chai";
import { adhocInputs, parseTrialArgs } from "../../../scripts/trial";
import { revealed } from "../../../lib/secret-envelope";
import { capacityLines } from "../../../scripts/capacity-lines";
import { UsageError } from "../../../scripts/args";
import { listenerProblem } from "../../../lib/trial/record";

const secret = (v: unknown) => ({ "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", plaintext: JSON.stringify(v) });

describe("npm run trial: arguments", () => {
  it("takes a stack, a rate and a count, and optionally one workload class", () => {
    expect(parseTrialArgs(["--stack", "dev", "--rate", "2.5", "--requests", "40"])).to.deep.equal({ stack: "dev", rate: 2.5, requests: 40 });
    expect(parseTrialArgs(["--stack", "dev", "--rate", "1", "--requests", "5", "--prompt-tokens", "512", "--output-tokens", "16", "--seed", "3"])).to.deep.include({ promptTokens: 512, outputTokens: 16, seed: 3 });
  });

  it("refuses what it cannot run, naming the flag", () => {
    expect(() => parseTrialArgs(["--stack", "dev", "--requests", "5"])).to.throw(UsageError, "--rate is required");
    expect(() => parseTrialArgs(["--stack", "dev", "--rate", "0", "--requests", "5"])).to.throw(UsageError, "--rate wants a positive number");
    expect(() => parseTrialArgs(["--stack", "dev", "--rate", "1", "--requests", "2.5"])).to.throw(UsageError, "--requests wants a positive integer");
    expect(() => parseTrialArgs(["--stack", "dev", "--rate", "1", "--requests", "5", "--prompt-tokens", "512"])).to.throw(UsageError, "--prompt-tokens and --output-tokens go together");
  });
});

describe("npm run trial: the point it runs", () => {
  const point = { id: "low", rate: 2, requests: 20, arrival: "poisson", seed: 0, mix: [{ promptTokens: 512, outputTokens: 32, weight: 1 }] };
  const resources = [
    { type: "pulumi-nodejs:dynamic/narwhal:Preflight", inputs: {} },
    { type: "pulumi-nodejs:dynamic/narwhal:LoadTrial", inputs: { point, viaPrivateKey: secret("-----BEGIN KEY-----"), hostPrivateKeys: secret({ sim1: "k1" }) } },
  ];

  it("is the configured point's fleet with the ad-hoc rate and count, its secrets revealed from the export", () => {
    const i = adhocInputs(resources, { stack: "dev", rate: 4, requests: 8 });
    expect(i.point).to.deep.equal({ ...point, id: "adhoc", rate: 4, requests: 8 });
    expect(i.viaPrivateKey).to.equal("-----BEGIN KEY-----");
    expect(i.hostPrivateKeys).to.deep.equal({ sim1: "k1" });
    expect(adhocInputs(resources, { stack: "dev", rate: 1, requests: 2, promptTokens: 256, outputTokens: 8 }).point.mix).to.deep.equal([{ promptTokens: 256, outputTokens: 8, weight: 1 }]);
  });

  it("says what to do when the stack has no point to take the fleet from, or not the one named", () => {
    expect(() => adhocInputs(resources.slice(0, 1), { stack: "dev", rate: 1, requests: 1 })).to.throw("stack dev has no trial point to take the fleet's routes from: add one to trial.points and run pulumi up");
    expect(() => adhocInputs(resources, { stack: "dev", rate: 1, requests: 1, point: "high" })).to.throw('stack dev has no trial point "high"; it has low');
  });

  it("reveals nested secrets and leaves other values alone", () => {
    expect(revealed({ a: [secret({ b: 1 })], c: "d" })).to.deep.equal({ a: [{ b: 1 }], c: "d" });
  });
});

describe("load trial: the router port's listener", () => {
  it("is the router's process or a worker it started", () => {
    expect(listenerProblem("4242 1 /srv/venv/bin/python narwhal-serve\n", 8000, 4242, "sim1")).to.equal(undefined);
    expect(listenerProblem("4300 4242 python worker\n", 8000, 4242, "sim1")).to.equal(undefined);
  });

  it("names another process holding the port, or none at all, as a listener conflict", () => {
    expect(listenerProblem("977 1 python3 -m http.server 8000\n", 8000, 4242, "sim1")).to.equal("listener conflict: port 8000 of sim1 is held by pid 977 (python3 -m http.server 8000), not the router 4242");
    expect(listenerProblem("", 8000, 4242, "sim1")).to.equal("listener conflict: nothing listens on port 8000 of sim1, where the router 4242 should");
  });
});

describe("demo: capacity lines", () => {
  it("prints each point's verdict against its prediction", () => {
    const p = { verdict: "pass", reasons: [], offeredRate: 2, achievedRate: 1.97, requests: 20, p50TtftMs: 120.4, p99TtftMs: 300, p50TpotMs: 9.87, p99TpotMs: 12, goodFraction: 1, errors: 0, predictedTtftMs: 110, predictedTpotMs: 9.5, departs: false, evidence: { relativePath: "x", digest: "y" } } as const;
    expect(capacityLines({ points: { low: { ...p, reasons: [] } } })).to.deep.equal(["low: pass, 2/s offered, 1.97/s sent, 0 failed, goodput 100%; TTFT p50 120 ms (predicted 110), TPOT p50 9.9 ms (predicted 9.5)"]);
    expect(capacityLines({ points: {} })).to.deep.equal(["no trial point configured (trial.points)"]);
  });
});
