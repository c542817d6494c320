import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { sharedFleet } from "./support/stack";
import { expectNothingPlanned, plannedChanges } from "./support/preview";
import { FLEET_AFTER_ENGINE_PATTERN } from "./support/names";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./support/remeasured";

const SHARD = "model-00002-of-00002.safetensors";

describe("e2e: discovery evidence follows the host", function () {
  this.timeout(1_200_000);

  it("replaces only the discovery of a host whose checkpoint changed, and stops before any engine on a differing replica", async () => {
    const { stack, hosts } = await sharedFleet();
    const [a, b] = hosts;
    const agreement = `replica-agreement fleet:${stack.name}`;
    const shard = path.join(b.modelDirOnMachine, SHARD);
    const original = fs.readFileSync(shard);

    await expectNothingPlanned(stack, { refresh: true });
    const changed = Buffer.from(original);
    changed[0] = changed[0] ^ 0xff;
    fs.writeFileSync(`${shard}.new`, changed);
    fs.renameSync(`${shard}.new`, shard);
    try {
      const steps = await plannedChanges(stack, { refresh: true });
      expect(steps.get(`fleet-${b.alias}`)).to.deep.include({ op: "replace", keys: ["checkpoint"] });
      expect(steps.has(`fleet-${a.alias}`), "the unchanged host's discovery").to.equal(false);
      for (const [name, step] of steps) {
        // Beyond the changed host: its narwhal install (whose login pins the key discovery verifies), the
        // replica check, the generated configuration, what derives from its engines' plans, and what the
        // fleet measured across them.
        expect(name, `${step.op} of ${name}`).to.match(new RegExp(`^fleet-(${b.alias}(-narwhal-venv)?|replicas|config|e2-.*|attestation-e2(-sidecar)?|profiles-e2|${FLEET_AFTER_ENGINE_PATTERN}|router-host-monitoring-targets)$`));
      }

      let failure = "";
      const snapshot = await snapshotEvidence(stack);
      await stack.up({ refresh: true }).catch((err: Error) => (failure = err.message));
      const diagnostics = failure.slice(failure.indexOf("Diagnostics:"));
      expect(diagnostics, diagnostics).to.include(`checkpoint differs between hosts ${a.alias} and ${b.alias} at ${SHARD}:`);
      // The replica check stops up before anything downstream of the new discovery is measured, and keeps
      // its refusal as a fail record (the runbook retains a failed attempt's evidence).
      expect(await remeasuredSince(snapshot)).to.deep.equal([`fleet-${b.alias}`, agreement]);
    } finally {
      fs.writeFileSync(`${shard}.old`, original);
      fs.renameSync(`${shard}.old`, shard);
    }
    // Back to the shared snapshot: re-discovery agrees again and no engine restarts.
    const restore = await plannedChanges(stack, { refresh: true });
    const restored = await snapshotEvidence(stack);
    await stack.up({ refresh: true });
    // The preview cannot see the host's facts before it is discovered again, so it plans more than happens;
    // up measures the host again and writes the configuration that cites its new discovery record, nothing
    // else; the replica check records that the replicas agree again, so its refusal is no longer current.
    const remeasured = await remeasuredSince(restored);
    expect(remeasured).to.deep.equal(["fleet-config", `fleet-${b.alias}`, agreement]);
    expect(plannedRemeasure(restore, restored)).to.include.members(remeasured.filter((r) => r !== agreement));
    const after = await plannedChanges(stack, { refresh: true });
    expect([...after.keys()]).to.deep.equal([]);
  });
});
