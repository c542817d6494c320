import { expect } from "chai";
import type { Stack } from "@pulumi/pulumi/automation";
import { sharedFleet, setObjectConfig } from "./support/stack";
import { expectNothingPlanned, plannedChanges, plannedWithLog, type PlannedStep } from "./support/preview";
import { FLEET_AFTER_ENGINE, processEvidence, ROUTER_RESTART, SCRAPE_TARGETS } from "./support/names";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./support/remeasured";
import { expectUpConvergesBeforePeersFail, restartPeersThenUp } from "./support/relaunch";
import { startTraffic, type TrafficReport } from "./support/router-traffic";

const engineUrls = (engines: Record<string, { url: string }>) => Object.entries(engines).map(([id, e]) => ({ id, url: e.url }));

/**
 * Runs `up` and holds the records it wrote to the plan (the configuration, the preflight and the router's
 * record of its new process are each replaced and each keep a record); then nothing is left to do.
 */
async function expectUpMeasuresAsPlanned(stack: Stack, steps: Map<string, PlannedStep>): Promise<void> {
  const snapshot = await snapshotEvidence(stack);
  await stack.up({ onOutput: () => undefined });
  expect(await remeasuredSince(snapshot)).to.deep.equal(plannedRemeasure(steps, snapshot)).and.deep.equal(["fleet-config", "fleet-preflight", "fleet-router-host-router-record"]);
  await expectNothingPlanned(stack);
}

describe("e2e: launch policy evidence", function () {
  this.timeout(1_200_000);

  it("rolls a new plan over the decode engines one per up: replaces only the discovery and the engine of its wave, and up measures only those", async () => {
    const { stack, engines, hosts } = await sharedFleet();
    const [, b] = hosts;
    // Every decode engine's plan changes; e3 and e4 keep their running plan while e2, the first wave, restarts.
    const edited = engines.map((e) => (["e2", "e3", "e4"].includes(e.id) ? { ...e, overrides: { maxNumSeqs: 4 } } : e));
    await setObjectConfig(stack, "engines", edited);
    try {
      const { steps, log } = await plannedWithLog(stack);
      expect(log.join("\n")).to.include("rollout: rolling change (maxNumSeqs 8 → 4) over 3 engines still on their previous settings, one per up: this up restarts e2");
      expect(steps.get(`fleet-${b.alias}`)).to.deep.include({ op: "replace", keys: ["policyDigest"] });
      const touched = [...steps.keys()].sort();
      // A new max_num_seqs is a new profiling limit too: the engine's profile is measured again. The host's
      // narwhal install logs in with the key its discovery verifies, so it updates with that discovery.
      expect(touched).to.deep.equal([...processEvidence("e2"), "fleet-e2-image-check", "fleet-e2-drain", "fleet-e2-process", "fleet-config", "fleet-replicas", `fleet-${b.alias}`, `fleet-${b.alias}-narwhal-venv`, ...FLEET_AFTER_ENGINE, SCRAPE_TARGETS].sort());
      // The planned restart of one decode engine (e3 and e4 serve its role) fails no request: the serving
      // router drains e2 before its process stops, and is swapped onto the store that profiles the new one.
      const outputs = await stack.outputs();
      const traffic = startTraffic(outputs.routerUrl.value as string, engineUrls(outputs.engines.value as Record<string, { url: string }>));
      let report: TrafficReport;
      try {
        await expectUpConvergesBeforePeersFail(stack, steps, "e2", { exact: true });
      } finally {
        report = await traffic.stop(hosts[0].alias, "/var/lib/narwhal-fleet/e2e/router");
      }
      const served = report.sent.filter((r) => r.outcome === 200).length;
      console.log(
        `      e2 relaunched on its new plan: ${report.sent.length} requests through the router, ${served} served, ${report.failed.length} failed, ` +
          `${report.retriedAt.length} attempts failed and were retried (at ${JSON.stringify(report.retriedAt)})`,
      );
      expect(report.failed.map((r) => `${r.outcome} ${r.reason ?? ""} at ${r.engines.join("+")}`)).to.deep.equal([]);
      expect(served).to.be.greaterThan(0);
      // Not even an attempt failed at e2, which the router's retry would hide (undrained, a few did).
      expect(report.retriedAt.filter((id) => id === "e2")).to.deep.equal([]);
      const after = await stack.outputs();
      const e2 = (after.engines.value as Record<string, { lastDrain?: { drained: boolean; reason: string } }>).e2;
      expect(e2.lastDrain, JSON.stringify(e2.lastDrain)).to.deep.include({ drained: true });
      // The stack says who runs which settings, and the next up is the next wave: e3, and e3 alone.
      const rollout = after.rollout.value as { status: string; wave: string[]; pending: string[]; engines: Record<string, { onTarget: boolean; settings: { maxNumSeqs: number } }> };
      expect(rollout).to.deep.include({ status: "rolling", wave: ["e2"], pending: ["e3", "e4"] });
      expect(Object.fromEntries(Object.entries(rollout.engines).map(([id, e]) => [id, e.settings.maxNumSeqs]))).to.deep.equal({ e1: 8, e2: 4, e3: 8, e4: 8 });
      const next = await plannedWithLog(stack);
      expect(next.log.join("\n")).to.include("this up restarts e3, drained first and readmitted once proven; e4 keeps its running settings");
      expect([...next.steps.keys()].filter((n) => /^fleet-e\d-process$/.test(n))).to.deep.equal(["fleet-e3-process"]);
    } finally {
      await setObjectConfig(stack, "engines", engines);
    }
    // The old limit back relaunches e2 once more: its peers restart first (the runbook's rule), so the up
    // measures every engine again and the router starts.
    await restartPeersThenUp(stack, "e2", { exact: true });
  });

  it("re-measures only the preflight for an SLO edit: the fleet document is written anew and the router restarted on it", async () => {
    const { stack } = await sharedFleet();
    const row = ["fleet-config", "fleet-preflight", ...ROUTER_RESTART].sort();
    await setObjectConfig(stack, "slo", { ttftS: 3 });
    try {
      const steps = await plannedChanges(stack);
      expect(steps.get("fleet-preflight")?.op).to.equal("replace");
      // No profile, attestation or engine: the SLO judges the evidence, it was not measured against it.
      expect([...steps.keys()].sort()).to.deep.equal(row);
      await expectUpMeasuresAsPlanned(stack, steps);
    } finally {
      await stack.removeConfig("narwhal-fleet:slo");
    }
    // The default SLO back is the same row again.
    const back = await plannedChanges(stack);
    expect([...back.keys()].sort()).to.deep.equal(row);
    await expectUpMeasuresAsPlanned(stack, back);
  });
});
