/**
 * The router's liveness probes the port the router serves. Its URL follows router.port, so it waits for the
 * port check: a port change the check refuses (the port is taken) stops the up before the liveness takes the
 * new URL, and the old router, still serving on its old port, is not called down by the next refresh. The
 * port check itself does not wait for the liveness (a restart for a new epoch needs no check: nothing serves).
 */
import { expect } from "chai";
import { fleetConfig, mockSecrets, settle, useFleetMocks, type Registered } from "./support/fleet";

describe("mocks: the router's liveness follows the port it serves", () => {
  const mocks = useFleetMocks();
  const named = (name: string) => {
    const r = mocks.registered.find((x) => x.name === name);
    expect(r, name).to.not.equal(undefined);
    return r!;
  };

  it("the liveness waits for the port check, which does not wait for it", async () => {
    const fleet = mocks.build(fleetConfig({ router: { port: 8123 } }), mockSecrets("k"));
    await settle(fleet.routerHostResources.router.liveness!.epoch);
    await settle(fleet.routerHostResources.router.started);
    const liveness = named("fleet-router-host-router-liveness");
    const portCheck = named("fleet-router-host-router-port-check");
    expect(liveness.inputs.url).to.match(/:8123$/);
    const waitsFor = (r: Registered, on: Registered) => (r.dependencies ?? []).some((urn) => urn.endsWith(`${on.type}::${on.name}`));
    expect(waitsFor(liveness, portCheck), "the liveness waits for the port check").to.equal(true);
    expect(waitsFor(portCheck, liveness), "the port check waits for the liveness").to.equal(false);
    // Its triggers are the router's inputs alone: no epoch among them.
    expect(JSON.stringify(portCheck.inputs.triggers)).to.not.include("epoch");
  });
});
