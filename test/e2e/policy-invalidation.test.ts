import { expect } from "chai";
import { sharedFleet } from "./support/stack";
import { plannedChanges } from "./support/preview";

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
      expect(touched).to.deep.equal(["fleet-attestation-e2", "fleet-attestation-e2-sidecar", "fleet-config", "fleet-e2-cache", "fleet-e2-generation", "fleet-e2-image-check", "fleet-e2-process", "fleet-replicas", `fleet-${b!.alias}`].sort());
    } finally {
      await stack.setConfig("narwhal-fleet:engines", { value: JSON.stringify(engines) });
    }
    expect([...(await plannedChanges(stack)).keys()]).to.deep.equal([]);
  });

  it("re-measures nothing for an SLO edit: only the fleet document is written anew", async () => {
    const { stack } = await sharedFleet();
    await stack.setConfig("narwhal-fleet:slo", { value: JSON.stringify({ ttftS: 3 }) });
    try {
      expect([...(await plannedChanges(stack)).keys()]).to.deep.equal(["fleet-config"]);
    } finally {
      await stack.removeConfig("narwhal-fleet:slo");
    }
  });
});
