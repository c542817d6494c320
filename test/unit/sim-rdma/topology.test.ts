import { expect } from "chai";
import { buildTopology } from "../../../sim/topology";
import { deviceNodesOf, pciDevicesOf } from "../../../sim/hosts/inventory";
import { sameStructure, toStored } from "../../../sim/hosts/state";

/** The topology's `rdma` option: which hosts get an HCA, what that adds to them, and what it refuses. */
describe("sim: hosts with an RDMA HCA in the topology", () => {
  const topology = buildTopology({ hosts: 41, rdma: { sim40: ["mlx5_0"] }, topologyFile: null });
  const host = (alias: string) => topology.hosts.find((h) => h.alias === alias)!;

  it("gives the named host its HCA: a Mellanox function in RoCE mode and the verbs device nodes; other hosts none", () => {
    expect(host("sim40").rdma).to.deep.equal(["mlx5_0"]);
    expect(host("sim41")).to.not.have.property("rdma");
    expect(pciDevicesOf(host("sim40"))).to.deep.include({ address: "0000:17:00.0", pciClass: "0x020000", vendor: "0x15b3", device: "0x101d", driver: "mlx5_core" });
    expect(pciDevicesOf(host("sim41")).map((d) => d.vendor)).to.not.include("0x15b3");
    expect(deviceNodesOf(host("sim40"))).to.include.members(["infiniband/uverbs0", "infiniband/rdma_cm", "nvidia0"]);
    expect(deviceNodesOf({ ...host("sim40"), layout: { name: "none", model: null, count: 0 } })).to.deep.equal(["infiniband/uverbs0", "infiniband/rdma_cm"]);
  });

  it("rebuilds a running host when its HCA is added or removed", () => {
    const stored = toStored(host("sim41"), "2026-01-01T00:00:00.000Z");
    expect(sameStructure(stored, host("sim41"))).to.equal(true);
    expect(sameStructure(stored, { ...host("sim41"), rdma: ["mlx5_0"] })).to.equal(false);
    expect(sameStructure(toStored(host("sim40"), "2026-01-01T00:00:00.000Z"), host("sim40"))).to.equal(true);
  });

  it("refuses more than one HCA per host, a name that is no HCA name, and a host outside the fleet", () => {
    expect(() => buildTopology({ hosts: 41, rdma: { sim40: ["mlx5_0", "mlx5_1"] }, topologyFile: null })).to.throw(
      'rdma for sim40 (["mlx5_0","mlx5_1"]): give each host at most one HCA name such as "mlx5_0" (a simulated host has one fabric interface)',
    );
    expect(() => buildTopology({ hosts: 41, rdma: { sim40: ["mlx5 0"] }, topologyFile: null })).to.throw('rdma for sim40 (["mlx5 0"])');
    expect(() => buildTopology({ hosts: 3, rdma: { sim40: ["mlx5_0"] }, topologyFile: null })).to.throw("rdma given for sim40, but the fleet has hosts sim1..sim3; raise --hosts");
  });
});
