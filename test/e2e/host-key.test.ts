import { expect } from "chai";
import { getObjectConfig, sharedFleet } from "./support/stack";
import { readHostKeyPair, restartSshdWithHostKey, restartSshdWithNewHostKey } from "../../sim/hosts";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./support/remeasured";
import { appliedChanges, plannedChanges, stepList } from "./support/preview";

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

  it("after the documented pin of a rotated key, preview --refresh forecasts exactly what up --refresh does, and then nothing", async () => {
    const { stack, hosts } = await sharedFleet();
    const target = hosts[1];
    const original = readHostKeyPair(target.alias);
    const replaced = await restartSshdWithNewHostKey(target.alias);
    // The operator's steps (docs/operating.md): run the config command the refusal prints, exactly as printed.
    const pinAs = async (): Promise<void> => {
      let message = "";
      await stack.preview({ refresh: true }).catch((err: Error) => (message = err.message));
      const command = /pulumi config set --path '([^']+)' '([^']+)'/.exec(message);
      expect(command, message).to.not.equal(null);
      await stack.setConfig(`narwhal-fleet:${command![1]}`, { value: command![2] }, true);
    };
    let failure: unknown;
    try {
      await pinAs();
      // The pin went into the list as the refusal said, and the list is otherwise as it was.
      const pinned = await getObjectConfig<Array<{ alias: string; hostKey?: string }>>(stack, "hosts");
      expect(pinned.map((h) => h.alias)).to.deep.equal(hosts.map((h) => h.alias));
      expect(pinned[1].hostKey).to.equal(replaced.hostKey);
      const planned = await plannedChanges(stack, { refresh: true });
      const snapshot = await snapshotEvidence(stack);
      const applied = await appliedChanges(stack, { refresh: true });
      expect(stepList(applied), "the steps up --refresh took").to.deep.equal(stepList(planned));
      // What a new key changes: the host's commands log in with it (their starts run again and keep their
      // processes; its narwhal install adopts the venv it made, and the look for that install takes the key),
      // and the generated configuration lists it.
      expect(stepList(planned), "the steps the preview forecast").to.deep.equal([
        "fleet-attestation-e2-sidecar update",
        "fleet-config replace",
        "fleet-e2-process update",
        `fleet-router-host-router-controller-check-${target.alias} update`,
        `fleet-${target.alias}-narwhal-presence update`,
        `fleet-${target.alias}-narwhal-venv update`,
      ]);
      // Same host, same hardware, same files: a new key measures nothing again. Only the generated
      // configuration, which carries each host's key, is rendered anew, as the preview said.
      const remeasured = await remeasuredSince(snapshot);
      expect(remeasured).to.deep.equal(plannedRemeasure(planned, snapshot));
      expect(remeasured.filter((name) => name !== "fleet-config")).to.deep.equal([]);
      expect(stepList(await plannedChanges(stack, { refresh: true }))).to.deep.equal([]);
    } catch (err) {
      failure = err;
    }
    // Rotating back is the same path: the refusal, its pin, one up. A failure above is the one reported.
    try {
      await restartSshdWithHostKey(target.alias, original);
      await pinAs();
      await stack.up({ refresh: true, onOutput: () => undefined });
    } catch (err) {
      failure ??= err;
    }
    if (failure) throw failure as Error;
    expect(stepList(await plannedChanges(stack, { refresh: true }))).to.deep.equal([]);
  });
});
