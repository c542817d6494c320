/**
 * The Profile resource's acceptance and the preflight's `profile` gate use one set of limits: a fit the
 * gate would fail is measured again a bounded number of times, each try kept, and the last error names
 * the engine, the figure, its value and the limit.
 */
import { expect } from "chai";
import { judgeProfiles, type GateProfile } from "../../../lib/preflight/judge";
import { Report } from "../../../lib/preflight/types";
import { DEFAULT_FIT_ATTEMPTS, measureWithinLimits, type FitTry } from "../../../lib/profiling/accept";
import { fitLimitsOf, fitLimitsProblem, fitProblems, NARWHAL_FIT_LIMITS, type FitEvidence } from "../../../lib/profiling/fit-limits";
import { ProfileError } from "../../../lib/profiling/errors";
import { withResamples, type ResampleSummary } from "../../../lib/profiling/resample";

const ROW: FitEvidence = { iid: "e1", decode_min_requests: 1, decode_max_requests: 8, decode_min_kv_tokens: 256, decode_max_kv_tokens: 9000, decode_fit_mape: 0.03, decode_cv_mape: 0.05 };

describe("profiling: fit limits shared with the preflight's profile gate", () => {
  it("takes the fleet document's limits, Narwhal's 0.05 and 0.13 where it leaves them out", () => {
    expect(fitLimitsOf(undefined)).to.deep.equal({ maxDecodeFitMape: 0.05, maxDecodeCvMape: 0.13 });
    expect(fitLimitsOf({ path: "p.json", max_decode_fit_mape: 0.08 })).to.deep.equal({ maxDecodeFitMape: 0.08, maxDecodeCvMape: 0.13 });
    expect(fitLimitsProblem({ maxDecodeFitMape: 0, maxDecodeCvMape: 0.13 })).to.match(/^fitLimits must be \{maxDecodeFitMape, maxDecodeCvMape\}, both positive numbers/);
    expect(fitLimitsProblem(NARWHAL_FIT_LIMITS)).to.equal(undefined);
  });

  it("a figure equal to its limit passes, just above fails, a missing one fails (as narwhal compares)", () => {
    expect(fitProblems({ ...ROW, decode_fit_mape: 0.05 }, NARWHAL_FIT_LIMITS)).to.deep.equal([]);
    expect(fitProblems({ ...ROW, decode_fit_mape: 0.0566 }, NARWHAL_FIT_LIMITS)).to.deep.equal([
      { figure: "decode_fit_mape", value: 0.0566, limit: 0.05, message: "e1 decode_fit_mape 0.0566 exceeds the profile-validation limit 0.05" },
    ]);
    expect(fitProblems({ ...ROW, decode_cv_mape: null }, NARWHAL_FIT_LIMITS).map((p) => p.message)).to.deep.equal(["e1 carries no decode_cv_mape evidence"]);
  });

  it("the gate fails exactly the rows the profile would not accept", () => {
    for (const row of [ROW, { ...ROW, decode_fit_mape: 0.0583 }, { ...ROW, decode_cv_mape: 0.2 }, { ...ROW, decode_max_requests: 1 }]) {
      const rep = new Report();
      judgeProfiles([{ iid: "e1" }], new Map([["e1", row as GateProfile]]), fitLimitsOf({}), rep);
      const gate = rep.results().find((g) => g.gate === "profile")!;
      expect(gate.lines.filter((l) => l.status === "fail").map((l) => l.message)).to.deep.equal(fitProblems(row, NARWHAL_FIT_LIMITS).map((p) => p.message));
    }
  });
});

describe("profiling: a fit over a limit is measured again, then fails naming the figure", () => {
  const measuring = (figures: number[]) => {
    const seen: number[] = [];
    return {
      seen,
      measure: async (attempt: number) => {
        seen.push(attempt);
        return { ...ROW, decode_fit_mape: figures[attempt - 1] };
      },
    };
  };

  it("accepts the first try within the limits and keeps the tries before it", async () => {
    const m = measuring([0.0566, 0.031]);
    const kept: Array<FitTry<FitEvidence>> = [];
    const r = await measureWithinLimits({ engineId: "e1", limits: NARWHAL_FIT_LIMITS, attempts: 3, measure: m.measure, rowOf: (x) => x, kept: async (t) => void kept.push(t) });
    expect(m.seen).to.deep.equal([1, 2]);
    expect(r.accepted.decode_fit_mape).to.equal(0.031);
    expect(r.tries.map((t) => [t.attempt, t.problems.map((p) => p.figure)])).to.deep.equal([
      [1, ["decode_fit_mape"]],
      [2, []],
    ]);
    expect(kept).to.deep.equal(r.tries);
  });

  it("stops after the configured tries with engine, figure, value, limit and what to do on the first line", async () => {
    const m = measuring([0.0566, 0.0583, 0.0571]);
    let err: ProfileError | undefined;
    await measureWithinLimits({ engineId: "e1", limits: NARWHAL_FIT_LIMITS, attempts: DEFAULT_FIT_ATTEMPTS, measure: m.measure, rowOf: (x) => x }).catch((e: ProfileError) => (err = e));
    expect(m.seen).to.deep.equal([1, 2, 3]);
    expect(err!.code).to.equal("NARWHAL_PROFILE_LIMIT");
    expect(err!.message.split("\n")[0]).to.equal(
      "engine e1: decode_fit_mape 0.0571 exceeds the limit 0.05 after 3 tries (try 1: decode_fit_mape 0.0566 > 0.05; try 2: decode_fit_mape 0.0583 > 0.05; try 3: decode_fit_mape 0.0571 > 0.05); " +
        "the preflight's profile gate would reject this profile. " +
        "Re-run `pulumi up` when the engine's host and the router host are not loaded by other work, or raise profiling.fitAttempts; a fit that never settles means the engine's timings are not what its profile can describe",
    );
  });

  it("does not retry a stop condition: the measurement's own error is the answer", async () => {
    let calls = 0;
    const stop = new ProfileError("NARWHAL_PROFILE_UNHEALTHY", "/health answered 503");
    const got = await measureWithinLimits({
      engineId: "e1",
      limits: NARWHAL_FIT_LIMITS,
      attempts: 3,
      measure: async () => {
        calls++;
        throw stop;
      },
      rowOf: (x: FitEvidence) => x,
    }).catch((e) => e);
    expect([got, calls]).to.deep.equal([stop, 1]);
  });

  it("counts every sweep in the refusal, one the prefill rule stopped included", async () => {
    const over = { ...ROW, decode_fit_mape: 0.0571 };
    let calls = 0;
    const err = (await measureWithinLimits({
      engineId: "e3",
      limits: NARWHAL_FIT_LIMITS,
      attempts: 3,
      measure: async () => {
        if (++calls === 2) throw new ProfileError("NARWHAL_PROFILE_PREFILL_FIT", "prefill median fit error 27.1%");
        return over;
      },
      rowOf: (x: FitEvidence) => x,
    }).catch((e) => e)) as ProfileError;
    expect(err.code).to.equal("NARWHAL_PROFILE_LIMIT");
    expect(err.message).to.match(
      /^engine e3: decode_fit_mape 0\.0571 exceeds the limit 0\.05 after 3 tries \(try 1: decode_fit_mape 0\.0571 > 0\.05; try 2: the prefill fit stopped; try 3: decode_fit_mape 0\.0571 > 0\.05\); /,
    );
  });

  it("counts re-taken samples apart from the tries, a stopped sweep's included, each try with its machine's figures", async () => {
    const resampled = (retaken: number, spent = false): ResampleSummary => ({
      threshold: 0.1,
      budget: 15,
      spent,
      samples: 15,
      disturbed: retaken,
      retaken,
      keptDisturbed: 0,
      peakLateness: 0.31,
      meanLateness: 0.12,
      peakPressure: 0.98,
      meanPressure: 0.9,
      points: [],
    });
    const sweeps = [
      { ...ROW, decode_fit_mape: 0.0566, resampled: resampled(4) },
      undefined,
      { ...ROW, decode_fit_mape: 0.0571, resampled: resampled(15, true) },
    ];
    let calls = 0;
    const err = (await measureWithinLimits({
      engineId: "e4",
      limits: NARWHAL_FIT_LIMITS,
      attempts: 3,
      measure: async () => {
        const s = sweeps[calls++];
        if (!s) throw withResamples(new ProfileError("NARWHAL_PROFILE_PREFILL_FIT", "prefill median fit error 27.1%"), resampled(2));
        return s;
      },
      rowOf: (x) => x,
      resamplesOf: (x) => x.resampled,
    }).catch((e) => e)) as ProfileError;
    expect(calls).to.equal(3);
    const figures = "the profiler's timers late up to 31% of a sample's time, mean 12%; CPU pressure up to 98%, mean 90%";
    expect(err.message.split("; the preflight's")[0]).to.equal(
      "engine e4: decode_fit_mape 0.0571 exceeds the limit 0.05 after 3 tries and 21 re-taken samples (" +
        `try 1: decode_fit_mape 0.0566 > 0.05, 4 samples re-taken (${figures}; budget 15); ` +
        `try 2: the prefill fit stopped, 2 samples re-taken (${figures}; budget 15); ` +
        `try 3: decode_fit_mape 0.0571 > 0.05, 15 samples re-taken (${figures}; budget 15, spent))`,
    );
  });

  it("measures again after Narwhal's prefill stop, within the same tries, and names every stopped try when none passes", async () => {
    const prefillStop = () => new ProfileError("NARWHAL_PROFILE_PREFILL_FIT", "prefill median fit error 27.1%, worst point 58.0%; inspect the retained per-length measurements before using this profile");
    const once = { calls: 0 };
    const r = await measureWithinLimits({
      engineId: "e2",
      limits: NARWHAL_FIT_LIMITS,
      attempts: 3,
      measure: async () => {
        if (++once.calls === 1) throw prefillStop();
        return ROW;
      },
      rowOf: (x: FitEvidence) => x,
    });
    expect([once.calls, r.accepted]).to.deep.equal([2, ROW]);

    let calls = 0;
    const err = (await measureWithinLimits({
      engineId: "e2",
      limits: NARWHAL_FIT_LIMITS,
      attempts: 2,
      measure: async () => {
        calls++;
        throw prefillStop();
      },
      rowOf: (x: FitEvidence) => x,
    }).catch((e) => e)) as ProfileError;
    expect(calls).to.equal(2);
    expect(err.code).to.equal("NARWHAL_PROFILE_PREFILL_FIT");
    expect(err.message).to.equal(
      "engine e2: the prefill fit stopped 2 of 2 tries (try 1: prefill median fit error 27.1%, worst point 58.0%; inspect the retained per-length measurements before using this profile; try 2); " +
        "try 2: prefill median fit error 27.1%, worst point 58.0%; inspect the retained per-length measurements before using this profile",
    );
  });
});

describe("profile provider: the limits as inputs", () => {
  const { inputFailures, provider } = require("../../../dynamic-providers/profile/provider") as typeof import("../../../dynamic-providers/profile/provider");
  const failuresOf = (news: Record<string, unknown>) => inputFailures(news).filter((f) => f.property === "fitLimits" || f.property === "fitAttempts");
  const row = { ...ROW, iid: "e1" };

  it("checks the limits and the tries before the engine is touched", () => {
    expect(failuresOf({ fitLimits: NARWHAL_FIT_LIMITS, fitAttempts: 3 })).to.deep.equal([]);
    expect(failuresOf({ fitLimits: { maxDecodeFitMape: -1, maxDecodeCvMape: 0.13 }, fitAttempts: 0 }).map((f) => f.property)).to.deep.equal(["fitLimits", "fitAttempts"]);
  });

  it("replaces a recorded row the gate would now reject, and only updates for a row within the new limits", async () => {
    const news = { fitLimits: NARWHAL_FIT_LIMITS, fitAttempts: 3 } as never;
    // Recorded before the Profile applied the limits: no fitLimits in state, a row the gate rejects.
    const stuck = await provider.diff!("p", { row: { ...row, decode_fit_mape: 0.0566 } }, news);
    expect(stuck).to.include({ changes: true });
    expect(stuck.replaces).to.deep.equal(["fitLimits"]);
    const fine = await provider.diff!("p", { row, fitLimits: { maxDecodeFitMape: 0.1, maxDecodeCvMape: 0.13 }, fitAttempts: 3 }, news);
    expect([fine.changes, fine.replaces]).to.deep.equal([true, []]);
    // A row within the limits recorded before they were inputs is not even an update.
    const before = await provider.diff!("p", { row }, news);
    expect(before.changes).to.equal(false);
  });
});

describe("profiling: limits print as narwhal prints them (Python's %g)", () => {
  const { pyG } = require("../../../lib/profiling/fit-limits") as typeof import("../../../lib/profiling/fit-limits");
  it("matches format(x, 'g') on limits people set", () => {
    const cases: Array<[number, string]> = [[0.05, "0.05"], [0.13, "0.13"], [1e-6, "1e-06"], [0.0001, "0.0001"], [0.00001, "1e-05"], [1, "1"], [0.123456789, "0.123457"], [1234567, "1.23457e+06"], [100000, "100000"], [0.1, "0.1"]];
    expect(cases.map(([x]) => pyG(x))).to.deep.equal(cases.map(([, g]) => g));
  });
});
