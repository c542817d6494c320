import { expect } from "chai";
import { sharedFleet } from "./support/stack";
import { readHostKeyPair, restartSshdWithHostKey, restartSshdWithNewHostKey } from "../../sim/hosts";
import { remeasuredSince, snapshotEvidence } from "./support/remeasured";

describe("e2e: pinned host keys", function () {
  this.timeout(1_200_000);

  it("stops a refresh at a changed host key, naming the host and both fingerprints; an up re-measures nothing", async () => {
    const { stack, hosts } = await sharedFleet();
    const target = hosts[1];
    const original = readHostKeyPair(target.alias);
    const replaced = await restartSshdWithNewHostKey(target.alias);
    try {
      expect(replaced.fingerprint).to.not.equal(target.fingerprint);
      const changed = `host ${target.alias}: the SSH host key changed (pinned ${target.fingerprint}, presented ${replaced.fingerprint}); nothing was run on it.`;
      let message = "";
      await stack.preview({ refresh: true }).catch((err: Error) => (message = err.message));
      expect(message).to.include(changed);
      // Design row: nothing runs. An up stops at the same refresh, and no measurement anywhere is taken again.
      const snapshot = await snapshotEvidence(stack);
      let upMessage = "";
      await stack.up({ refresh: true, onOutput: () => undefined }).catch((err: Error) => (upMessage = err.message));
      expect(upMessage).to.include(changed);
      expect(await remeasuredSince(snapshot)).to.deep.equal([]);
    } finally {
      await restartSshdWithHostKey(target.alias, original);
    }
    // With the original key back, the same refresh finds nothing to change.
    const preview = await stack.preview({ refresh: true, expectNoChanges: true });
    expect(Object.keys(preview.changeSummary).filter((op) => op !== "same")).to.deep.equal([]);
  });
});
