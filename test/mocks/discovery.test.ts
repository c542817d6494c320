/**
 * Gate A's component under mocks: what moved into it from directly under the Fleet keeps its name and
 * registers an alias to the URN it had there, so an existing stack's state (and evidence) carries over
 * instead of a delete and a create.
 */
import { expect } from "chai";
import { fleetConfig, mockSecrets, settle, useFleetMocks } from "./support/fleet";

const STACK = "urn:pulumi:mock::narwhal-fleet::";
const FLEET = `${STACK}narwhal:fleet:Fleet::fleet`;
const DISCOVERY = `${STACK}narwhal:fleet:Fleet$narwhal:discovery:Discovery::fleet-discovery`;
/** The URN each resource had under the Fleet, before Gate A had its own component. */
const formerly = (type: string, name: string) => `${STACK}narwhal:fleet:Fleet$pulumi-nodejs:dynamic/narwhal:${type}::${name}`;

describe("mocks: Discovery component (Gate A)", () => {
  const mocks = useFleetMocks();
  const registered = mocks.registered;

  it("sits under the Fleet and holds every discovery, the replica agreement and the generated configuration, each aliased to its URN under the Fleet", async () => {
    const fleet = mocks.build(fleetConfig(), mockSecrets("mock-api-key-0123456789"));
    await settle(fleet.deploymentConfig.configDigest);
    const component = registered.filter((r) => r.type === "narwhal:discovery:Discovery");
    expect(component.map((r) => [r.name, r.parent])).to.deep.equal([["fleet-discovery", FLEET]]);
    const moved = registered.filter((r) => r.parent === DISCOVERY).map((r) => ({ name: r.name, aliases: r.aliases }));
    expect(moved).to.have.deep.members([
      { name: "fleet-a", aliases: [formerly("HostDiscovery", "fleet-a")] },
      { name: "fleet-b", aliases: [formerly("HostDiscovery", "fleet-b")] },
      { name: "fleet-replicas", aliases: [formerly("ReplicaAgreement", "fleet-replicas")] },
      { name: "fleet-config", aliases: [formerly("DeploymentConfig", "fleet-config")] },
    ]);
    expect(moved).to.have.lengthOf(4);
  });

  it("leaves what did not move where it was, with no alias", async () => {
    const fleet = mocks.build(fleetConfig(), mockSecrets("mock-api-key-0123456789"));
    await settle(fleet.engines);
    const engines = registered.filter((r) => r.type === "narwhal:engine:Engine");
    expect(engines.map((r) => [r.name, r.parent, r.aliases])).to.deep.equal([
      ["fleet-e1", FLEET, []],
      ["fleet-e2", FLEET, []],
      ["fleet-e3", FLEET, []],
    ]);
  });

  it("hands each host's retainOnDestroy and stateDir to its discovery, which its delete reads", async () => {
    const config = fleetConfig();
    const [a, b] = config.hosts as Array<Record<string, unknown>>;
    const fleet = mocks.build({ ...config, hosts: [{ ...a, retainOnDestroy: true, stateDir: "/srv/narwhal" }, b] }, mockSecrets("mock-api-key-0123456789"));
    await settle(fleet.deploymentConfig.configDigest);
    const discovery = (name: string) => registered.find((r) => r.type.endsWith(":HostDiscovery") && r.name === name)!.inputs;
    expect(discovery("fleet-a")).to.include({ retainOnDestroy: true, stateDir: "/srv/narwhal", stack: "mock" });
    expect(discovery("fleet-b")).to.include({ retainOnDestroy: false, stateDir: "/var/lib/narwhal-fleet" });
  });

  it("picks the router host as the runbook's discovery does: router.host, else the lowest-numbered engine's", () => {
    expect(mocks.build(fleetConfig(), mockSecrets("k")).discovery.routerHost).to.equal("a");
    expect(mocks.build(fleetConfig({ router: { host: "b" } }), mockSecrets("k")).discovery.routerHost).to.equal("b");
  });
});
