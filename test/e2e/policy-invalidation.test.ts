import { expect } from "chai";
import { sharedFleet } from "./support/stack";
import { plannedChanges } from "./support/preview";
import { FLEET_AFTER_ENGINE, processEvidence, ROUTER_RESTART, SCRAPE_TARGETS } from "./support/names";

describe("e2e: launch policy evidence", function () {
  this.timeout(1_200_000);

  it("replaces only the discovery and the engine that a per-engine policy change touches", async () => {
    const { stack, engines, hosts } = await sharedFleet();
    const [, b] = hosts;
    const edited = engines.map((e) => (e.id === "e2" ? { ...e, overrides: { maxNumSeqs: 4 } } : e));
    await stack.setConfig("narwhal-fleet:engines", { value: JSON.stringify(edited) });
    try {
      const steps = await plannedChanges(stack);
      expect(steps.get(`fleet-${b!.alias}`)).to.deep.include({ op: "replace", keys: ["policyDigest"] });
      const touched = [...steps.keys()].sort();
      // A new max_num_seqs is a new profiling limit too: the engine's profile is measured again.
      expect(touched).to.deep.equal([...processEvidence("e2"), "fleet-e2-image-check", "fleet-e2-process", "fleet-config", "fleet-replicas", `fleet-${b!.alias}`, ...FLEET_AFTER_ENGINE, SCRAPE_TARGETS].sort());
    } finally {
      await stack.setConfig("narwhal-fleet:engines", { value: JSON.stringify(engines) });
    }
    expect([...(await plannedChanges(stack)).keys()]).to.deep.equal([]);
  });

  it("re-measures only the preflight for an SLO edit: the fleet document is written anew and the router restarted on it", async () => {
    const { stack } = await sharedFleet();
    await stack.setConfig("narwhal-fleet:slo", { value: JSON.stringify({ ttftS: 3 }) });
    try {
      const steps = await plannedChanges(stack);
      expect(steps.get("fleet-preflight")?.op).to.equal("replace");
      // No profile, attestation or engine: the SLO judges the evidence, it was not measured against it.
      expect([...steps.keys()].sort()).to.deep.equal(["fleet-config", "fleet-preflight", ...ROUTER_RESTART].sort());
    } finally {
      await stack.removeConfig("narwhal-fleet:slo");
    }
  });
});
