import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
  autoGid,
  gidDecimal,
  gidIpv4,
  parseIbvDevinfo,
  parseRdmaSysfs,
  rateGbps,
  rdmaPortProblems,
  rdmaSysfsScript,
  readRdmaSections,
  roceActiveMtu,
  selectGid,
  type RdmaInventory,
} from "../../../lib/discovery/rdma";
import { splitSections } from "../../../lib/discovery/probe-script";
import { writeHcaTree } from "../../../sim/rdma/sysfs";

/**
 * The sysfs reader run for real under sh against a tree as the kernel lays it out (written by the
 * simulator's own writer into a temporary folder, the script pointed at it), and the parser and port
 * checks on what it printed.
 */
function readTree(root: string, sel: Parameters<typeof rdmaSysfsScript>[0]): RdmaInventory {
  const script = rdmaSysfsScript(sel).replaceAll("/sys/class/infiniband", `${root}/sys/class/infiniband`).replaceAll("/sys/class/net/", `${root}/sys/class/net/`);
  const out = execFileSync("sh", ["-c", script], { encoding: "utf8", env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" } });
  const s = splitSections(out);
  return parseRdmaSysfs(s.rdma, s.rdma_devinfo);
}

describe("discovery: RDMA HCAs from sysfs", () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "rdma-sysfs-"));
    const pci = path.join(root, "sys", "bus", "pci", "devices");
    fs.mkdirSync(path.join(pci, "0000:17:00.0"), { recursive: true });
    fs.writeFileSync(path.join(pci, "0000:17:00.0", "numa_node"), "0\n");
    writeHcaTree(pci, path.join(root, "sys", "class"), { alias: "gpu1", name: "mlx5_0", netdev: "ens1f0np0", mac: "0c:42:a1:12:34:56", addresses: ["10.0.1.11"] }, 0);
    // The netdev, where the tree's absolute link points on a real host.
    const net = path.join(root, "sys", "class", "net", "ens1f0np0");
    fs.mkdirSync(net, { recursive: true });
    fs.writeFileSync(path.join(net, "mtu"), "9000\n");
    fs.writeFileSync(path.join(net, "operstate"), "up\n");
    fs.writeFileSync(path.join(net, "carrier"), "1\n");
    const link = path.join(pci, "0000:17:00.0", "net", "ens1f0np0");
    fs.rmSync(link);
    fs.symlinkSync(net, link);
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it("reads every HCA port: state, link layer, rate, the non-zero GIDs with types and netdevs, the netdev and its MTU", () => {
    const inv = readTree(root, {});
    expect(inv.present).to.equal(true);
    expect(inv.ibvDevinfo).to.equal(false);
    expect(inv.devices).to.have.length(1);
    const dev = inv.devices[0];
    expect(dev).to.deep.include({ name: "mlx5_0", pciAddress: "0000:17:00.0", nodeType: "1: CA", nodeGuid: "0c42:a103:0012:3456", fwVer: "22.39.1002", netdevs: ["ens1f0np0"] });
    const port = dev.ports[0];
    expect(port).to.deep.include({
      hca: "mlx5_0",
      port: 1,
      state: "4: ACTIVE",
      stateName: "ACTIVE",
      physState: "5: LinkUp",
      linkLayer: "Ethernet",
      rate: "200 Gb/sec (4X HDR)",
      rateGbps: 200,
      lid: "0x0",
      gidTableLength: 255,
      activeMtu: 4096,
      activeMtuSource: "netdev",
      counters: null,
      hwCounters: null,
    });
    expect(port.netdev).to.deep.equal({ name: "ens1f0np0", mtu: 9000, operstate: "up", carrier: 1 });
    expect(port.gids).to.deep.equal([
      { index: 0, gid: "fe80:0000:0000:0000:0e42:a1ff:fe12:3456", type: "IB/RoCE v1", netdev: "ens1f0np0", ipv4: null },
      { index: 1, gid: "fe80:0000:0000:0000:0e42:a1ff:fe12:3456", type: "RoCE v2", netdev: "ens1f0np0", ipv4: null },
      { index: 2, gid: "0000:0000:0000:0000:0000:ffff:0a00:010b", type: "IB/RoCE v1", netdev: "ens1f0np0", ipv4: "10.0.1.11" },
      { index: 3, gid: "0000:0000:0000:0000:0000:ffff:0a00:010b", type: "RoCE v2", netdev: "ens1f0np0", ipv4: "10.0.1.11" },
    ]);
  });

  it("reads one port with its counters, and nothing when the host has no /sys/class/infiniband", () => {
    const counters = path.join(root, "sys", "bus", "pci", "devices", "0000:17:00.0", "infiniband", "mlx5_0", "ports", "1", "counters");
    fs.writeFileSync(path.join(counters, "port_xmit_data"), "123456789012\n");
    const port = readTree(root, { hca: "mlx5_0", port: 1, counters: true }).devices[0].ports[0];
    expect(port.counters).to.include({ port_xmit_data: 123456789012, port_rcv_data: 0, symbol_error: 0 });
    expect(port.hwCounters).to.include({ local_ack_timeout_err: 0, out_of_sequence: 0 });
    expect(port.hwCounters).to.not.have.property("lifespan");
    fs.rmSync(path.join(root, "sys", "class", "infiniband"), { recursive: true });
    expect(readTree(root, {})).to.deep.equal({ present: false, devices: [], ibvDevinfo: false });
  });

  it("takes the active MTU from ibv_devinfo when the host has it", () => {
    const text = "present\nhca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tphys_port_cnt:\t\t\t1\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t1024 (3)\n\t\t\tlink_layer:\t\tEthernet\n\n";
    expect([...parseIbvDevinfo(text.slice("present\n".length))]).to.deep.equal([["mlx5_0/1", 1024]]);
    const sysfs = "present\nmlx5_0/ports/1/state:4: ACTIVE\nmlx5_0/ports/1/link_layer:Ethernet\n";
    const port = parseRdmaSysfs(sysfs, text).devices[0].ports[0];
    expect(port).to.deep.include({ activeMtu: 1024, activeMtuSource: "ibv_devinfo" });
  });

  it("derives RoCE's active MTU from the netdev's as mlx5 does (minus 96, rounded down, at most 4096)", () => {
    expect([1500, 2200, 4191, 4192, 9000, 300, 351, 352].map(roceActiveMtu)).to.deep.equal([1024, 2048, 2048, 4096, 4096, null, null, 256]);
    expect([rateGbps("200 Gb/sec (4X HDR)"), rateGbps("2.5 Gb/sec (1X SDR)"), rateGbps(null)]).to.deep.equal([200, 2.5, null]);
    expect(gidIpv4("0000:0000:0000:0000:0000:ffff:c612:0032")).to.equal("198.18.0.50");
    expect(gidIpv4("fe80:0000:0000:0000:0e42:a1ff:fe12:3456")).to.equal(null);
    expect(gidDecimal("0000:0000:0000:0000:0000:ffff:0a00:010c")).to.equal("00:00:00:00:00:00:00:00:00:00:255:255:10:00:01:12");
  });

  describe("a configured port", () => {
    it("is usable when ACTIVE with its GID index; UCX's own choice is the IPv4 RoCE v2 GID", () => {
      const inv = readTree(root, {});
      expect(rdmaPortProblems(inv, { hca: "mlx5_0", port: 1, gidIndex: 3 })).to.deep.equal([]);
      expect(rdmaPortProblems(inv, { hca: "mlx5_0", port: 1, gidIndex: null })).to.deep.equal([]);
      const port = inv.devices[0].ports[0];
      expect(autoGid(port)?.index).to.equal(3);
      expect(selectGid(port, null)).to.deep.include({ index: 3, ipv4: "10.0.1.11", type: "RoCE v2", source: "auto" });
      expect(selectGid(port, 1)).to.deep.include({ index: 1, ipv4: null, type: "RoCE v2", source: "configured" });
    });

    it("is refused, naming the HCA and port, when it is down, absent, or its GID index is empty or past the table", () => {
      const ports = path.join(root, "sys", "bus", "pci", "devices", "0000:17:00.0", "infiniband", "mlx5_0", "ports", "1");
      fs.writeFileSync(path.join(ports, "state"), "1: DOWN\n");
      fs.writeFileSync(path.join(ports, "phys_state"), "3: Disabled\n");
      const inv = readTree(root, {});
      expect(rdmaPortProblems(inv, { hca: "mlx5_0", port: 1, gidIndex: 3 })).to.deep.equal([
        "HCA mlx5_0 port 1 is 1: DOWN (phys_state 3: Disabled), not 4: ACTIVE; RDMA traffic cannot use it: bring the port up (cable, netdev ens1f0np0, subnet manager) before measuring",
      ]);
      const gids = "0 (fe80:0000:0000:0000:0e42:a1ff:fe12:3456, IB/RoCE v1), 1 (fe80:0000:0000:0000:0e42:a1ff:fe12:3456, RoCE v2), 2 (10.0.1.11, IB/RoCE v1), 3 (10.0.1.11, RoCE v2)";
      expect(rdmaPortProblems(inv, { hca: "mlx5_0", port: 1, gidIndex: 9 })[1]).to.equal(
        `HCA mlx5_0 port 1 has no GID at index 9 (the slot is empty, the all-zero GID); set rdma.gidIndex to one of: ${gids}`,
      );
      expect(rdmaPortProblems(inv, { hca: "mlx5_0", port: 1, gidIndex: 255 })[1]).to.equal(
        `HCA mlx5_0 port 1 has no GID index 255: its GID table has 255 entries; set rdma.gidIndex to one of: ${gids}`,
      );
      expect(rdmaPortProblems(inv, { hca: "mlx5_1", port: 1, gidIndex: 3 })).to.deep.equal([
        "HCA mlx5_1 port 1: there is no HCA mlx5_1 in /sys/class/infiniband (found: mlx5_0); check rdma.hcas",
      ]);
      expect(rdmaPortProblems(inv, { hca: "mlx5_0", port: 2, gidIndex: 3 })).to.deep.equal(["HCA mlx5_0 port 2: mlx5_0 has no port 2 (ports: 1); check rdma.hcas"]);
      expect(rdmaPortProblems({ present: false, devices: [], ibvDevinfo: false }, { hca: "mlx5_0", port: 1, gidIndex: null })).to.deep.equal([
        "HCA mlx5_0 port 1: the host has no /sys/class/infiniband (no RDMA driver loaded, or no HCA)",
      ]);
    });

    it("on RoCE needs some GID: a port whose table holds none is refused", () => {
      const only = parseRdmaSysfs("present\nmlx5_0/ports/1/state:4: ACTIVE\nmlx5_0/ports/1/link_layer:Ethernet\nmlx5_0/ports/1/gid_tbl_len:255\n");
      expect(rdmaPortProblems(only, { hca: "mlx5_0", port: 1, gidIndex: null })).to.deep.equal(["HCA mlx5_0 port 1 is RoCE but has no usable GID (none): its netdev has no address"]);
    });
  });

  it("reports, through discovery's probe sections, each configured port that cannot carry traffic", () => {
    const errors: string[] = [];
    const report = (section: string, detail: string) => errors.push(`${section}: ${detail}`);
    expect(readRdmaSections({}, [], report)).to.equal(null);
    expect(errors).to.deep.equal([]);
    readRdmaSections({}, [{ hca: "mlx5_0", port: 1, gidIndex: 3 }], report);
    expect(errors).to.deep.equal(["rdma: the probe printed no rdma section (its output was cut short); run discovery again"]);
    errors.length = 0;
    const inv = readRdmaSections({ rdma: "present\nmlx5_0/ports/1/state:2: INIT\nmlx5_0/ports/1/phys_state:5: LinkUp\nmlx5_0/ports/1/link_layer:InfiniBand\n" }, [{ hca: "mlx5_0", port: 1, gidIndex: null }], report);
    expect(inv?.devices[0].ports[0].linkLayer).to.equal("InfiniBand");
    expect(errors).to.deep.equal([
      "rdma: HCA mlx5_0 port 1 is 2: INIT (phys_state 5: LinkUp), not 4: ACTIVE; RDMA traffic cannot use it: bring the port up (cable, subnet manager) before measuring",
    ]);
  });
});
