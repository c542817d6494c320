import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { provider } from "../../dynamic-providers/host-discovery/provider";
import type { HostDiscoveryOutputs } from "../../dynamic-providers/host-discovery/schema";
import { evidenceRoot } from "../../lib/evidence";
import { setRdmaPortState, simDown, simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import { discoveryFailure, discoveryInputs } from "./support/host-discovery";

/**
 * Discovery reads each host's HCAs from sysfs and refuses a configured HCA port that cannot carry RDMA
 * traffic, against simulated hosts of this file's own: sim40 with an HCA (mlx5_0, RoCE on fab0), sim42
 * without one.
 */
const HOSTS = ["sim40", "sim42"];

describe("providers: host discovery of RDMA HCAs", function () {
  this.timeout(120_000);
  let hosts: Map<string, SimHost>;
  before(async () => {
    const fleet = await simUp({ hosts: 42, aliases: HOSTS, rdma: { sim40: ["mlx5_0"] } });
    hosts = new Map(fleet.hosts.map((h) => [h.alias, h]));
  });
  after(async () => {
    await simDown({ aliases: HOSTS });
  });

  it("records the host's HCA: port state, link layer, rate, MTU, GID table and netdev, in its outputs and evidence", async () => {
    const h = hosts.get("sim40")!;
    const { outs } = await provider.create(discoveryInputs(h, { rdmaPorts: [{ hca: "mlx5_0", port: 1, gidIndex: 3 }], devicePaths: ["/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"] }));
    const o = outs as HostDiscoveryOutputs;
    expect(o.rdma!.present).to.equal(true);
    expect(o.rdma!.devices.map((d) => d.name)).to.deep.equal(["mlx5_0"]);
    const dev = o.rdma!.devices[0];
    expect(dev).to.deep.include({ pciAddress: "0000:17:00.0", nodeType: "1: CA", fwVer: "22.39.1002", netdevs: ["fab0"] });
    expect(dev.ports[0]).to.deep.include({
      port: 1,
      state: "4: ACTIVE",
      physState: "5: LinkUp",
      linkLayer: "Ethernet",
      rate: "200 Gb/sec (4X HDR)",
      rateGbps: 200,
      gidTableLength: 255,
      activeMtu: 1024,
      activeMtuSource: "netdev",
    });
    expect(dev.ports[0].netdev).to.deep.include({ name: "fab0", mtu: 1500, operstate: "up", carrier: 1 });
    expect(dev.ports[0].gids.map((g) => [g.index, g.type, g.ipv4, g.netdev])).to.deep.equal([
      [0, "IB/RoCE v1", null, "fab0"],
      [1, "RoCE v2", null, "fab0"],
      [2, "IB/RoCE v1", "198.18.0.50", "fab0"],
      [3, "RoCE v2", "198.18.0.50", "fab0"],
    ]);
    const record = JSON.parse(fs.readFileSync(path.join(evidenceRoot(process.cwd(), "provider-tests"), o.evidence.relativePath), "utf8"));
    expect(record.observations.rdma).to.deep.equal(JSON.parse(JSON.stringify(o.rdma)));
    expect(record.inputs.rdmaPorts).to.deep.equal([{ hca: "mlx5_0", port: 1, gidIndex: 3 }]);
  });

  it("records that a host without an HCA has none, and asks nothing of it when no engine there uses RDMA", async () => {
    const { outs } = await provider.create(discoveryInputs(hosts.get("sim42")!));
    expect((outs as HostDiscoveryOutputs).rdma).to.deep.equal({ present: false, devices: [], ibvDevinfo: false });
    expect(await discoveryFailure(provider.create(discoveryInputs(hosts.get("sim42")!, { rdmaPorts: [{ hca: "mlx5_0", port: 1, gidIndex: null }] })))).to.equal(
      "host sim42, probe section rdma: HCA mlx5_0 port 1: the host has no /sys/class/infiniband (no RDMA driver loaded, or no HCA)",
    );
  });

  it("refuses a port that is down, a GID index that does not exist and an HCA the host lacks, naming host, HCA and port; a refresh still succeeds", async () => {
    const h = hosts.get("sim40")!;
    const { outs } = await provider.create(discoveryInputs(h, { rdmaPorts: [{ hca: "mlx5_0", port: 1, gidIndex: 3 }] }));
    setRdmaPortState("sim40", "down");
    try {
      expect(await discoveryFailure(provider.create(discoveryInputs(h, { rdmaPorts: [{ hca: "mlx5_0", port: 1, gidIndex: 3 }] })))).to.equal(
        "host sim40, probe section rdma: HCA mlx5_0 port 1 is 1: DOWN (phys_state 3: Disabled), not 4: ACTIVE; RDMA traffic cannot use it: bring the port up (cable, netdev fab0, subnet manager) before measuring",
      );
      // A refresh records what it sees; the edges that use the port are what move.
      await provider.read!(outs.factsDigest as string, outs as HostDiscoveryOutputs);
    } finally {
      setRdmaPortState("sim40", "active");
    }
    expect(await discoveryFailure(provider.create(discoveryInputs(h, { rdmaPorts: [{ hca: "mlx5_0", port: 1, gidIndex: 7 }] })))).to.match(
      /^host sim40, probe section rdma: HCA mlx5_0 port 1 has no GID at index 7 \(the slot is empty, the all-zero GID\); set rdma\.gidIndex to one of: .*3 \(198\.18\.0\.50, RoCE v2\)$/,
    );
    expect(await discoveryFailure(provider.create(discoveryInputs(h, { rdmaPorts: [{ hca: "mlx5_1", port: 1, gidIndex: null }] })))).to.equal(
      "host sim40, probe section rdma: HCA mlx5_1 port 1: there is no HCA mlx5_1 in /sys/class/infiniband (found: mlx5_0); check rdma.hcas",
    );
  });
});
