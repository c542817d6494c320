import { expect } from "chai";
import * as pulumi from "@pulumi/pulumi";
import { fleetConfig, mockSecrets, settle, useFleetMocks } from "./support/fleet";
import { unlistOwnFields } from "../../components/opaque-component";

/**
 * What Pulumi's Output walks when it checks a value for unknowns (`containsUnknowns`: every enumerable
 * property, each object once): the objects reached from `root`.
 */
function walked(root: unknown): Set<object> {
  const seen = new Set<object>();
  const visit = (v: unknown) => {
    if (v === null || typeof v !== "object" || seen.has(v)) return;
    seen.add(v);
    for (const k of Object.keys(v)) visit((v as Record<string, unknown>)[k]);
  };
  visit(root);
  return seen;
}

describe("mocks: what an Output's check for unknowns walks from a resource", () => {
  const mocks = useFleetMocks();

  it("one engine's resources lead to none of another engine's, nor to the fleet's meshes", async () => {
    const fleet = mocks.build(fleetConfig(), mockSecrets("mock-api-key-0123456789"));
    await settle(fleet.engines);
    const [first, second] = fleet.engineParts.map((p) => p.engine);
    const reached = walked(first.generation);
    expect(reached.has(first.generation)).to.equal(true);
    for (const other of [second, second.generation, second.cache, fleet.fabric, fleet.profiles, fleet.attestation, fleet.preflight]) {
      expect(reached.has(other), (other as unknown as { __name: string }).__name).to.equal(false);
    }
    // A walk through a resource is bounded by what that one resource holds, whatever the fleet's size.
    expect(reached.size).to.be.below(200);
  });

  it("the fields stay readable, and an Output of a resource list resolves to the resources", async () => {
    const fleet = mocks.build(fleetConfig(), mockSecrets("mock-api-key-0123456789"));
    expect(fleet.engineParts.map((p) => p.spec.id)).to.deep.equal(["e1", "e2", "e3"]);
    expect(Object.keys(fleet)).to.not.include("engineParts");
    const resources = await settle(pulumi.output([fleet.fabric, fleet.preflight]));
    expect(resources).to.deep.equal([fleet.fabric, fleet.preflight]);
  });

  it("unlistOwnFields hides a component's own fields from the walk, not Pulumi's", () => {
    const component = { __name: "c", urn: "u", held: { big: [1, 2, 3] }, count: 3 };
    unlistOwnFields(component);
    expect(Object.keys(component)).to.deep.equal(["__name", "urn"]);
    expect(component.held.big).to.deep.equal([1, 2, 3]);
    expect(component.count).to.equal(3);
  });
});
