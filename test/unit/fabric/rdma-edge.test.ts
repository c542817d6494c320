import { expect } from "chai";
import { parseRdmaSysfs, type RdmaInventory } from "../../../lib/discovery/rdma";
import { counterProblems, gidAddress, observeRdmaEnd, parseRdmaRoute, rdmaCounterEvidence, rdmaPairProblems, rdmaRouteScript, type ObservedRdmaEnd } from "../../../lib/fabric/rdma-edge";
import { linkFingerprint } from "../../../lib/fabric/fingerprint";

/** One RoCE port as sysfs prints it, with `extra` lines appended (later lines win). */
function roce(address: string, extra: string[] = []): RdmaInventory {
  const hex = address.split(".").map((n) => Number(n).toString(16).padStart(2, "0"));
  const v4 = `0000:0000:0000:0000:0000:ffff:${hex[0]}${hex[1]}:${hex[2]}${hex[3]}`;
  return parseRdmaSysfs(
    [
      "present",
      "mlx5_0/net:ens1f0np0",
      "mlx5_0/net/ens1f0np0/mtu:9000",
      "mlx5_0/ports/1/gid_tbl_len:255",
      "mlx5_0/ports/1/state:4: ACTIVE",
      "mlx5_0/ports/1/phys_state:5: LinkUp",
      "mlx5_0/ports/1/link_layer:Ethernet",
      "mlx5_0/ports/1/rate:200 Gb/sec (4X HDR)",
      "mlx5_0/ports/1/gids/0:fe80:0000:0000:0000:0e42:a1ff:fe12:3456",
      "mlx5_0/ports/1/gid_attrs/types/0:IB/RoCE v1",
      "mlx5_0/ports/1/gid_attrs/ndevs/0:ens1f0np0",
      `mlx5_0/ports/1/gids/2:${v4}`,
      "mlx5_0/ports/1/gid_attrs/types/2:IB/RoCE v1",
      "mlx5_0/ports/1/gid_attrs/ndevs/2:ens1f0np0",
      `mlx5_0/ports/1/gids/3:${v4}`,
      "mlx5_0/ports/1/gid_attrs/types/3:RoCE v2",
      "mlx5_0/ports/1/gid_attrs/ndevs/3:ens1f0np0",
      ...extra,
    ].join("\n"),
  );
}

const end = (host: string, inv: RdmaInventory, gidIndex: number | null = 3): ObservedRdmaEnd => observeRdmaEnd(host, { hca: "mlx5_0", port: 1, gidIndex }, inv).end!;

describe("RDMA edges: the ends, the pair, the route and the counters", () => {
  it("fingerprints an end by what sysfs shows of its port and the GID it uses", () => {
    const r = observeRdmaEnd("gpu1", { hca: "mlx5_0", port: 1, gidIndex: null }, roce("10.0.1.11"));
    expect(r.problems).to.deep.equal([]);
    expect(r.end!.fingerprint).to.deep.equal({
      hca: "mlx5_0",
      port: 1,
      gidIndex: 3,
      gid: "0000:0000:0000:0000:0000:ffff:0a00:010b",
      gidType: "RoCE v2",
      netdev: "ens1f0np0",
      linkLayer: "Ethernet",
      state: "4: ACTIVE",
      rate: "200 Gb/sec (4X HDR)",
      activeMtu: 4096,
    });
  });

  it("names the host, HCA and port of an end that cannot carry the traffic, and still fingerprints a port that is there", () => {
    const down = observeRdmaEnd("gpu2", { hca: "mlx5_0", port: 1, gidIndex: 3 }, roce("10.0.1.12", ["mlx5_0/ports/1/state:1: DOWN", "mlx5_0/ports/1/phys_state:3: Disabled"]));
    expect(down.problems).to.deep.equal([
      "host gpu2: HCA mlx5_0 port 1 is 1: DOWN (phys_state 3: Disabled), not 4: ACTIVE; RDMA traffic cannot use it: bring the port up (cable, netdev ens1f0np0, subnet manager) before measuring",
    ]);
    expect(down.end!.fingerprint.state).to.equal("1: DOWN");
    const absent = observeRdmaEnd("gpu2", { hca: "mlx5_3", port: 1, gidIndex: 3 }, roce("10.0.1.12"));
    expect(absent).to.deep.equal({ end: null, problems: ["host gpu2: HCA mlx5_3 port 1: there is no HCA mlx5_3 in /sys/class/infiniband (found: mlx5_0); check rdma.hcas"] });
  });

  it("refuses a pair whose GIDs differ in family or RoCE version, as perftest and UCX would fail to connect", () => {
    const a = end("gpu1", roce("10.0.1.11"));
    expect(rdmaPairProblems(a, end("gpu2", roce("10.0.1.12")))).to.deep.equal([]);
    expect(rdmaPairProblems(a, end("gpu2", roce("10.0.1.12"), 0))).to.deep.equal([
      "GID index 3 on gpu1 mlx5_0 port 1 is IPv4 (0000:0000:0000:0000:0000:ffff:0a00:010b) but GID index 0 on gpu2 mlx5_0 port 1 is IPv6 (fe80:0000:0000:0000:0e42:a1ff:fe12:3456): " +
        'both ends need one address family (perftest: "Found Incompatibility issue with GID types"); choose rdma.gidIndex accordingly',
      "GID index 3 on gpu1 mlx5_0 port 1 is RoCE v2 but GID index 0 on gpu2 mlx5_0 port 1 is IB/RoCE v1: both ends need one RoCE version",
    ]);
    const ib = end("gpu2", roce("10.0.1.12", ["mlx5_0/ports/1/link_layer:InfiniBand"]), null);
    expect(rdmaPairProblems(a, ib)).to.deep.equal(["gpu1 mlx5_0 port 1 is Ethernet but gpu2 mlx5_0 port 1 is InfiniBand: RDMA needs one fabric"]);
  });

  it("routes RoCE v2 between the GIDs' addresses, and fingerprints that route (a TCP edge's digest stays what it was)", () => {
    const [a, b] = [end("gpu1", roce("10.0.1.11")), end("gpu2", roce("10.0.1.12"))];
    expect(gidAddress(a.gid)).to.equal("10.0.1.11");
    expect(gidAddress(end("gpu1", roce("10.0.1.11"), 0).gid)).to.equal(null); // RoCE v1 is not routed
    expect(rdmaRouteScript(a.gid, b.gid)).to.equal(`out=$(ip route get '10.0.1.12' from '10.0.1.11' 2>&1); printf '@@narwhal-rdma-route %s\\n%s\\n' "$?" "$out"\n`);
    expect(parseRdmaRoute("gpu1", "@@narwhal-rdma-route 0\n10.0.1.12 from 10.0.1.11 dev ens1f0np0 uid 0 \n    cache \n")).to.deep.equal({ exitStatus: 0, text: "10.0.1.12 from 10.0.1.11 dev ens1f0np0 uid 0 \n    cache" });
    const base = {
      transport: "ucx_rdma" as const,
      source: { host: "gpu1", interface: "ens8f0", address: "10.0.0.11" },
      destination: { host: "gpu2", address: "10.0.0.12" },
      mtu: 1500,
      route: "10.0.0.12 from 10.0.0.11 dev ens8f0 uid 0\n    cache",
      rdma: { source: a.fingerprint, destination: b.fingerprint },
    };
    const good = linkFingerprint({ ...base, rdmaRoute: "10.0.1.12 from 10.0.1.11 dev ens1f0np0 uid 0" });
    expect(good.problems).to.deep.equal([]);
    expect(good.fingerprint.rdmaRoute).to.include({ destination: "10.0.1.12", device: "ens1f0np0" });
    const astray = linkFingerprint({ ...base, rdmaRoute: "10.0.1.12 from 10.0.1.11 via 10.0.0.1 dev ens8f0 uid 0" });
    expect(astray.problems).to.deep.equal(["the RDMA route from mlx5_0 port 1 leaves by ens8f0, not ens1f0np0, the netdev of GID index 3"]);
    expect(astray.digest).to.not.equal(good.digest);
    const tcp = { ...base, transport: "tcp" as const, rdma: undefined };
    expect(linkFingerprint({ ...tcp, rdmaRoute: "10.0.1.12 from 10.0.1.11 dev x" }).fingerprint).to.not.have.property("rdmaRoute");
  });

  it("fingerprints an InfiniBand port without a GID index (no GRH)", () => {
    const ib = (h: string) => end(h, parseRdmaSysfs("present\nmlx5_0/ports/1/state:4: ACTIVE\nmlx5_0/ports/1/link_layer:InfiniBand\nmlx5_0/ports/1/gids/0:fe80:0000:0000:0000:0c42:a103:0012:3456\n"), null);
    const [a, b] = [ib("gpu1"), ib("gpu2")];
    expect(a.gid).to.equal(null);
    expect(rdmaPairProblems(a, b)).to.deep.equal([]);
    const f = linkFingerprint({
      transport: "ucx_rdma",
      source: { host: "gpu1", interface: "ib0", address: "10.0.0.11" },
      destination: { host: "gpu2", address: "10.0.0.12" },
      mtu: 2044,
      route: "10.0.0.12 from 10.0.0.11 dev ib0",
      rdma: { source: a.fingerprint, destination: b.fingerprint },
    });
    expect(f.fingerprint.rdma!.source).to.deep.include({ gidIndex: null, gid: null, linkLayer: "InfiniBand" });
  });

  describe("counters", () => {
    const ends = { source: { host: "gpu1", hca: "mlx5_0", port: 1 }, destination: { host: "gpu2", hca: "mlx5_0", port: 1 } };
    const before = { counters: { port_xmit_data: 1000, port_rcv_data: 500, symbol_error: 0, port_rcv_errors: 2 }, hwCounters: { local_ack_timeout_err: 0, packet_seq_err: 1, out_of_sequence: 0 } };

    it("records the data both ends saw (× 4 bytes), the errors and retransmissions that grew, and the sender's retransmits", () => {
      const c = rdmaCounterEvidence(
        ends,
        { source: before, destination: before },
        {
          source: { counters: { port_xmit_data: 1000 + 82_000_000, port_rcv_data: 600, symbol_error: 0, port_rcv_errors: 2 }, hwCounters: { local_ack_timeout_err: 2, packet_seq_err: 4, out_of_sequence: 0 } },
          destination: { counters: { port_xmit_data: 1100, port_rcv_data: 500 + 82_000_000, symbol_error: 3, port_rcv_errors: 2 }, hwCounters: { local_ack_timeout_err: 0, packet_seq_err: 1, out_of_sequence: 5 } },
        },
      );
      expect([c.sourceXmitBytes, c.destinationRcvBytes]).to.deep.equal([328_000_000, 328_000_000]);
      expect(c.errors).to.deep.equal({ "gpu2 mlx5_0/1 symbol_error": 3 });
      expect(c.retransmissionCounters).to.deep.equal({ "gpu1 mlx5_0/1 local_ack_timeout_err": 2, "gpu1 mlx5_0/1 packet_seq_err": 3, "gpu2 mlx5_0/1 out_of_sequence": 5 });
      expect(c.retransmits).to.equal(5);
      expect(counterProblems(c, 65536 * 5000)).to.deep.equal([]);
      expect(counterProblems(c, 400_000_000)).to.deep.equal([
        "gpu1 mlx5_0 port 1 sent 328000000 bytes (Δport_xmit_data × 4) while the test wrote 400000000: the traffic did not cross this port",
        "gpu2 mlx5_0 port 1 received 328000000 bytes (Δport_rcv_data × 4) while the test wrote 400000000: the traffic did not cross this port",
      ]);
    });

    it("judges nothing it could not read: counters not exposed, reset, or stuck at 2^32-1", () => {
      const none = { counters: null, hwCounters: null };
      const c = rdmaCounterEvidence(ends, { source: none, destination: before }, { source: none, destination: { counters: { port_xmit_data: 10, port_rcv_data: 4294967295 }, hwCounters: null } });
      expect([c.sourceXmitBytes, c.destinationRcvBytes, c.retransmits]).to.deep.equal([null, null, null]);
      expect(c.destination.delta.counters).to.deep.equal({ port_rcv_data: null, port_xmit_data: null });
      expect(counterProblems(c, 1)).to.deep.equal([]);
    });
  });
});
