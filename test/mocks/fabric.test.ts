import { expect } from "chai";
import { fleetConfig, mockSecrets, settle, useFleetMocks } from "./support/fleet";

/** Resource shape only: what each FabricEdge is given to prove its reservation. */
describe("mocks: fabric edges", () => {
  const mocks = useFleetMocks();

  it("gives each edge every engine on its two hosts, by side, at the URL the fleet reaches it", async () => {
    const fleet = mocks.build(fleetConfig(), mockSecrets("mock-api-key-0123456789"));
    await settle(fleet.fabric.edgeMatrix);
    const edges = mocks.registered.filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:FabricEdge");
    expect(edges.map((r) => r.name).sort()).to.deep.equal(["fleet-fabric-a-to-b", "fleet-fabric-b-to-a"]);
    const enginesOf = (name: string) => edges.find((r) => r.name === name)!.inputs.engines;
    // e1 and e3 run on a, e2 on b (each on its base port plus its index): config order, each on the side its host is on this edge.
    expect(enginesOf("fleet-fabric-a-to-b")).to.deep.equal([
      { engineId: "e1", side: "source", url: "http://198.18.0.11:8100" },
      { engineId: "e2", side: "destination", url: "http://198.18.0.12:8101" },
      { engineId: "e3", side: "source", url: "http://198.18.0.11:8102" },
    ]);
    expect(enginesOf("fleet-fabric-b-to-a")).to.deep.equal([
      { engineId: "e1", side: "destination", url: "http://198.18.0.11:8100" },
      { engineId: "e2", side: "source", url: "http://198.18.0.12:8101" },
      { engineId: "e3", side: "destination", url: "http://198.18.0.11:8102" },
    ]);
  });

  it("leaves out engines on hosts the edge does not join", async () => {
    const config = fleetConfig({
      hosts: [
        { alias: "a", destination: "root@198.18.0.11", fabricInterface: "fab0" },
        { alias: "b", destination: "ops@198.18.0.12", port: 2222, fabricInterface: "fab0" },
        { alias: "c", destination: "root@198.18.0.13", fabricInterface: "fab0" },
      ],
      engines: [
        { id: "e1", host: "a", gpuIds: [0] },
        { id: "e2", host: "b", gpuIds: [0] },
        { id: "e4", host: "c", gpuIds: [0] },
      ],
    });
    const fleet = mocks.build(config, mockSecrets("mock-api-key-0123456789"));
    await settle(fleet.fabric.edgeMatrix);
    const ab = mocks.registered.find((r) => r.name === "fleet-fabric-a-to-b")!;
    expect((ab.inputs.engines as Array<{ engineId: string }>).map((e) => e.engineId)).to.deep.equal(["e1", "e2"]);
  });
});
