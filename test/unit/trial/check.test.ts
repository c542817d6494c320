/** The load trial provider's check: a point is refused by field, and against the profiled range, before anything remote runs. */
import { expect } from "chai";
import { inputFailures, rejudged, MEASURED_AGAINST } from "../../../dynamic-providers/load-trial/provider";
import type { LoadTrialInputs, LoadTrialOutputs } from "../../../dynamic-providers/load-trial/schema";
import { UNKNOWN } from "../../../lib/unknown";
import { row, summary } from "./fixtures";

const DIGEST = `sha256:${"b".repeat(64)}`;
const login = { host: "198.18.0.11", port: 22, user: "root", hostKey: "ssh-ed25519 AAAA", alias: "sim1" };

function inputs(over: Partial<LoadTrialInputs> = {}): LoadTrialInputs {
  return {
    stack: "dev",
    point: { id: "low", rate: 2, requests: 20, arrival: "poisson", seed: 0, mix: [{ promptTokens: 512, outputTokens: 32, weight: 1 }] },
    model: "tiny-llama",
    slo: { ttftS: 10, tpotS: 0.125 },
    routerUrl: "http://198.18.0.11:8000",
    routerPid: 4242,
    routerStartedAt: "2026-12-05T10:00:00Z",
    fleetDocumentDigest: DIGEST,
    scrapeIntervalS: 5,
    engines: [
      { engineId: "e1", role: "prefill", hostAlias: "sim1", url: "http://198.18.0.11:8100", generationDigest: DIGEST, row: row("e1") },
      { engineId: "e2", role: "decode", hostAlias: "sim2", url: "http://198.18.0.12:8101", generationDigest: DIGEST, row: row("e2") },
    ],
    profileStoreDigest: DIGEST,
    routerHost: "sim1",
    via: login,
    hosts: [{ alias: "sim1", login }],
    requestTimeoutS: 120,
    drainTimeoutS: 120,
    minGoodFraction: 0.9,
    predictionBound: 0.5,
    routerOverheadS: 0.05,
    ...over,
  };
}

const reasons = (i: LoadTrialInputs) => inputFailures(i as unknown as Record<string, unknown>).map((f) => `${f.property}: ${f.reason}`);

describe("load trial: check", () => {
  it("accepts a point within the profiled range", () => {
    expect(reasons(inputs())).to.deep.equal([]);
  });

  it("lets a preview's unknown values through the typed fields, and judges them on the up", () => {
    const preview = { ...inputs(), routerPid: UNKNOWN, slo: UNKNOWN, engines: UNKNOWN, fleetDocumentDigest: UNKNOWN } as unknown as LoadTrialInputs;
    expect(reasons(preview)).to.deep.equal([]);
    expect(reasons({ ...inputs(), routerPid: 0, slo: { ttftS: "1", tpotS: 0.05 } } as unknown as LoadTrialInputs)).to.deep.equal([
      "routerPid: routerPid must be a positive integer, got 0",
      'slo: slo.ttftS must be a positive number of seconds, got "1"',
    ]);
  });

  it("refuses a rate the profiles do not cover, naming the range", () => {
    const [problem, ...rest] = reasons(inputs({ point: { ...inputs().point, rate: 5000 } }));
    expect(rest).to.deep.equal([]);
    expect(problem).to.match(/^point: trial\.points\[id=low\]\.rate 5000 req\/s is above [0-9.]+ req\/s, the highest rate for this mix/);
  });

  it("refuses a prompt longer than every prefill row measured", () => {
    const [problem] = reasons(inputs({ point: { ...inputs().point, rate: 0.5, mix: [{ promptTokens: 8192, outputTokens: 32, weight: 1 }] } }));
    expect(problem).to.equal("point: trial.points[id=low].mix[0].promptTokens 8192 is outside the profiled prefill sweep [16, 4096]; use a prompt length within it, or profile a wider prefill sweep");
  });

  it("refuses a fleet without both roles, and a malformed point, field by field", () => {
    expect(reasons(inputs({ engines: inputs().engines.slice(1) }))).to.deep.equal(["engines: engines: a trial needs at least one prefill and one decode engine"]);
    expect(reasons(inputs({ point: { ...inputs().point, requests: 0, arrival: "burst" as "poisson" } }))).to.deep.equal([
      "point: point.requests must be a positive integer, got 0",
      'point: point.arrival must be "poisson" or "constant", got "burst"',
    ]);
  });

  it("replaces on what the point was measured against, and only re-judges a new goodput fraction", () => {
    expect(MEASURED_AGAINST).to.include.members(["point", "engines", "profileStoreDigest", "routerStartedAt", "slo"]);
    const reconciliation = { status: "reconciled" as const, causes: [], checks: [], tolerance: { sendLagMs: 50, eventLoopDelayMs: 100, tokens: 0.02 } };
    const old = { ...inputs(), verdict: "pass", reasons: [], summary: summary({ good_fraction: 0.85, completed: 20 }), reconciliation, prediction: { ttftS: 0.1, tpotS: 0.02, e2elS: 1, decodeRequestsPerEngine: 1, prefillUtilisation: 0.1 } } as unknown as LoadTrialOutputs;
    expect(rejudged(old, inputs({ minGoodFraction: 0.9 })).verdict).to.equal("slo-miss");
    expect(rejudged(old, inputs({ minGoodFraction: 0.8 })).verdict).to.equal("pass");
    // A new router overhead moves the predicted first token by the difference, and the departure with it.
    expect(rejudged(old, inputs({ routerOverheadS: 0.15 })).prediction.ttftS).to.be.closeTo(0.2, 1e-9);
  });
});
