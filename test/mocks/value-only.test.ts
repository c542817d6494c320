import { expect } from "chai";
import * as pulumi from "@pulumi/pulumi";
import { fleetConfig, mockSecrets, settle, useFleetMocks } from "./support/fleet";
import { valueOnly } from "../../components/value-only";

/** The SDK's own fields of an Output, which its typings leave out: what valueOnly relies on. */
interface Fields {
  allResources(): Promise<Set<pulumi.Resource>>;
  isKnown: Promise<boolean>;
  isSecret: Promise<boolean>;
}
const fields = (o: pulumi.Output<unknown>) => o as unknown as Fields;

describe("mocks: valueOnly, an Output's value without the resources it came from", () => {
  const mocks = useFleetMocks();

  it("keeps the value and drops the resources, which the receiving resource's state would list", async () => {
    const fleet = mocks.build(fleetConfig(), mockSecrets("mock-api-key-0123456789"));
    const fromEngines = fleet.cacheGroups;
    expect((await fields(fromEngines).allResources()).size, "the cache groups come from every engine and host").to.be.greaterThan(3);
    const only = valueOnly(fromEngines);
    expect((await fields(only).allResources()).size).to.equal(0);
    expect(await settle(only)).to.deep.equal(await settle(fromEngines));
  });

  it("an unknown value stays unknown, a secret stays secret", async () => {
    const OutputImpl = pulumi.Output as unknown as new (...a: unknown[]) => pulumi.Output<number>;
    const unknown = new OutputImpl(new Set(), Promise.resolve(undefined), Promise.resolve(false), Promise.resolve(false), Promise.resolve(new Set()));
    expect(await fields(valueOnly(unknown)).isKnown).to.equal(false);
    const secret = valueOnly(pulumi.secret(42));
    expect(await fields(secret).isSecret).to.equal(true);
    expect(await fields(secret).isKnown).to.equal(true);
    expect(await settle(secret)).to.equal(42);
  });
});
