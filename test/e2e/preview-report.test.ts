import { expect } from "chai";
import { sharedFleet, setObjectConfig } from "./support/stack";
import { invalidationSummary } from "../../scripts/stack/preview";
import { replaced, updated } from "./support/report";

// A restarted engine's report, through the function and the CLI, is checked where the engine restarts:
// test/e2e/engine-restart.test.ts (one restart of the shared fleet serves both).
describe("e2e: the preview report (npm run invalidated)", function () {
  this.timeout(1_200_000);

  it("lists a fabric budget change as edge verdicts re-judged, apart from replacements, with the required figure old → new", async () => {
    const { stack } = await sharedFleet();
    await setObjectConfig(stack, "fabric", { headroom: 2 });
    try {
      const s = await invalidationSummary(stack);
      expect(replaced(s)).to.deep.equal([]);
      expect(s.gates.map((g) => g.gate)).to.deep.equal(["D"]);
      const edges = updated(s).filter((e) => e.kind === "fabric edge");
      expect(edges.map((e) => e.subject).sort()).to.deep.equal(["sim1 → sim2", "sim1 → sim4", "sim2 → sim1", "sim2 → sim4", "sim4 → sim1", "sim4 → sim2"]);
      for (const e of edges) {
        const required = e.changes.find((c) => c.input === "requiredGbps")!;
        // headroom 1.25 → 2 scales each edge's required rate by 1.6.
        expect(Number(required.new) / Number(required.old)).to.be.closeTo(1.6, 1e-9);
      }
      expect(updated(s).map((e) => e.name)).to.include("fleet-fabric-gate");
    } finally {
      await stack.removeConfig("narwhal-fleet:fabric");
    }
    expect((await invalidationSummary(stack)).nothingInvalidated).to.equal(true);
  });
});
