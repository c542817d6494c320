import { expect } from "chai";
import { reconcile } from "../../../lib/trial/reconcile";
import { CLIENT_TRIES, disturbedClientOnly, reasonsAfterTries, untilUndisturbed, type TryResult } from "../../../lib/trial/tries";
import type { Reconciliation } from "../../../lib/trial/types";
import { clean, engine } from "./fixtures";

/** A reconciliation as reconcile() gives it, after `change` disturbed the clean run. */
function reconciled(change: (o: ReturnType<typeof clean>) => void = () => undefined): Reconciliation {
  const o = clean();
  change(o);
  return reconcile(o);
}
const lagging = (o: ReturnType<typeof clean>) => (o.summary.p99_send_lag_ms = 63);
const stalled = (o: ReturnType<typeof clean>) => (o.summary.max_event_loop_delay_ms = 180);

describe("trial tries: a point only the client machine disturbed runs again", () => {
  it("calls scheduler lag and client saturation the client machine's, alone or together", () => {
    expect(disturbedClientOnly(reconciled(lagging))).to.equal(true);
    expect(disturbedClientOnly(reconciled(stalled))).to.equal(true);
    expect(disturbedClientOnly(reconciled((o) => (lagging(o), stalled(o))))).to.equal(true);
  });

  it("never re-runs a reconciled point, nor one the fleet kept from reconciling", () => {
    expect(disturbedClientOnly(reconciled())).to.equal(false);
    // A restart inside the window is the fleet's, even with the client lagging too.
    const reset = reconciled((o) => {
      lagging(o);
      o.direct.after.engines.d1 = engine({ processStart: 1764934999.5, success: { length: 4 }, generationTokens: 400, promptTokens: 2000 });
    });
    expect(reset.causes.some((c) => c.startsWith("counter reset: "))).to.equal(true);
    expect(disturbedClientOnly(reset)).to.equal(false);
  });

  it("never re-runs a lagging point whose counts disagree: the disagreement, unnamed beside the lag, is the fleet's", () => {
    const r = reconciled((o) => {
      lagging(o);
      o.direct.after.engines.d0 = engine({ success: { stop: 23, length: 14 }, generationTokens: 3700, promptTokens: 18500 });
      o.prometheus!.after!.engines.d0 = structuredClone(o.direct.after.engines.d0);
    });
    expect(r.causes.map((c) => c.split(":")[0])).to.deep.equal(["scheduler lag"]);
    expect(r.checks.filter((c) => !c.ok).length).to.be.above(0);
    expect(disturbedClientOnly(r)).to.equal(false);
  });

  const tryOf = (n: number, r: Reconciliation): TryResult => ({ observations: { reconciliation: r }, evidence: { relativePath: `load-trial/try-${n}.json`, digest: `sha256:${n}` } });

  it("runs again after a disturbed try, passing on the tries before, and stops at the first undisturbed one", async () => {
    const seen: Array<[number, string[]]> = [];
    const lines: string[] = [];
    const outcomes = [reconciled(lagging), reconciled(stalled), reconciled()];
    const { last, disturbed } = await untilUndisturbed(
      async (before) => {
        const n = before.length + 1;
        seen.push([n, before.map((d) => d.evidence.relativePath)]);
        return tryOf(n, outcomes[n - 1]);
      },
      (l) => lines.push(l),
    );
    expect(seen).to.deep.equal([
      [1, []],
      [2, ["load-trial/try-1.json"]],
      [3, ["load-trial/try-1.json", "load-trial/try-2.json"]],
    ]);
    expect(last.evidence.relativePath).to.equal("load-trial/try-3.json");
    expect(disturbed.map((d) => d.reasons[0].split(":")[0])).to.deep.equal(["scheduler lag", "client saturation"]);
    expect(lines[0]).to.match(/^try 1 of 3: the client machine disturbed it \(scheduler lag: .*\); its record is load-trial\/try-1\.json; running the point again$/);
  });

  it(`stops after ${CLIENT_TRIES} tries however disturbed, and at once after a try the fleet failed`, async () => {
    let calls = 0;
    const always = await untilUndisturbed(async (before) => (calls++, tryOf(before.length + 1, reconciled(lagging))));
    expect(calls).to.equal(CLIENT_TRIES);
    expect(always.disturbed).to.have.length(CLIENT_TRIES - 1);
    calls = 0;
    const reset = reconciled((o) => (o.direct.after.engines.d1 = engine({ processStart: 1, success: {}, generationTokens: 0, promptTokens: 0 })));
    await untilUndisturbed(async () => (calls++, tryOf(1, reset)));
    expect(calls).to.equal(1);
    calls = 0;
    const thrown = await untilUndisturbed(async () => {
      calls++;
      throw new Error("trial point low: the fleet did not drain");
    }).catch((e: Error) => e.message);
    expect(thrown).to.equal("trial point low: the fleet did not drain");
    expect(calls).to.equal(1);
  });

  it("says how many tries the client machine disturbed, exactly, and whether the last was one of them", () => {
    const d = (n: number) => ({ evidence: { relativePath: `load-trial/try-${n}.json`, digest: "sha256:x" }, reasons: ["scheduler lag: …"] });
    expect(reasonsAfterTries(["ok"], [], false)).to.deep.equal(["ok"]);
    expect(reasonsAfterTries(["ok"], [d(1)], false)).to.deep.equal(["ok", "the client machine disturbed the try before this one (load-trial/try-1.json)"]);
    expect(reasonsAfterTries(["scheduler lag: …"], [d(1), d(2)], true)).to.deep.equal([
      "scheduler lag: …",
      "the client machine disturbed the 2 tries before this one (load-trial/try-1.json, load-trial/try-2.json) and this one too: all 3 tries were disturbed; run the point again on a quieter client machine",
    ]);
  });
});
