import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { PROJECT_ROOT, sharedFleet } from "./support/stack";
import { expectNothingPlanned, plannedChanges } from "./support/preview";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./support/remeasured";

/** Design section 5: a record whose bytes no longer match the digest in state is invalid evidence. */
describe("e2e: an evidence record altered on disk", function () {
  this.timeout(1_200_000);

  it("shows as invalid evidence in a refreshing preview, and up measures exactly that again", async () => {
    const { stack } = await sharedFleet();
    const state = await stack.exportStack();
    const gate = (state.deployment.resources as Array<{ urn: string; outputs?: { evidence?: { relativePath: string; digest: string } } }>).find((r) => r.urn.endsWith("::fleet-fabric-gate"))!;
    const record = path.join(PROJECT_ROOT, "runs", "e2e", "evidence", gate.outputs!.evidence!.relativePath);
    const original = fs.readFileSync(record);

    // One changed verdict: still a well-formed record, only its digest can tell.
    fs.chmodSync(record, 0o600);
    fs.writeFileSync(record, original.toString("utf8").replace('"pass"', '"fail"'));
    try {
      const steps = await plannedChanges(stack, { refresh: true });
      expect([...steps.values()]).to.deep.equal([{ name: "fleet-fabric-gate", type: "pulumi-nodejs:dynamic/narwhal:FabricGate", op: "replace", keys: ["evidence"] }]);

      // The gate judges its edges again into a new record, and no other record is written.
      const snapshot = await snapshotEvidence(stack);
      await stack.up({ refresh: true, onOutput: () => undefined });
      expect(await remeasuredSince(snapshot)).to.deep.equal(plannedRemeasure(steps, snapshot)).and.deep.equal(["fleet-fabric-gate"]);
      const after = (await stack.exportStack()).deployment.resources as Array<{ urn: string; outputs?: { evidence?: { relativePath: string } } }>;
      expect(after.find((r) => r.urn.endsWith("::fleet-fabric-gate"))!.outputs!.evidence!.relativePath).to.not.equal(gate.outputs!.evidence!.relativePath);
      await expectNothingPlanned(stack, { refresh: true });
    } finally {
      // The store's export refuses any record that fails its digest: leave the shared store whole.
      fs.writeFileSync(record, original);
    }
  });
});
