import { expect } from "chai";
import type { FabricError } from "../../../lib/fabric/errors";
import { linkFingerprint, parseRouteGet, type LinkFingerprintInputs } from "../../../lib/fabric/fingerprint";

function thrown(fn: () => unknown): FabricError {
  try {
    fn();
  } catch (err) {
    return err as FabricError;
  }
  throw new Error("expected an error");
}

describe("ip route get", () => {
  // The first three were printed by iproute2 on this machine; the fourth is the fabric case's shape.
  it("reads a routed destination and drops uid and the cache line", () => {
    expect(parseRouteGet("8.8.8.8 via 192.0.2.1 dev eth0 src 192.0.2.2 uid 0 \n    cache \n")).to.deep.equal({
      type: "unicast",
      destination: "8.8.8.8",
      gateway: "192.0.2.1",
      device: "eth0",
      source: "192.0.2.2",
      from: null,
      table: null,
      mtu: null,
    });
  });

  it("reads a local route and an IPv6 answer", () => {
    expect(parseRouteGet("local 127.0.0.1 dev lo src 127.0.0.1 uid 0 \n    cache <local> \n")).to.include({ type: "local", destination: "127.0.0.1", device: "lo", source: "127.0.0.1" });
    expect(parseRouteGet("local ::1 from :: dev lo table local proto kernel src ::1 metric 0 pref medium\n")).to.deep.equal({
      type: "local",
      destination: "::1",
      gateway: null,
      device: "lo",
      source: "::1",
      from: "::",
      table: "local",
      mtu: null,
    });
  });

  it("gives the same fields whoever asks and whatever the route cache holds", () => {
    const a = parseRouteGet("10.0.1.12 from 10.0.1.11 dev fab0 uid 0 \n    cache \n");
    const b = parseRouteGet("10.0.1.12 from 10.0.1.11 dev fab0 uid 1000 \n    cache expires 297sec mtu 1450 \n");
    expect(a).to.deep.equal(b);
    expect(a).to.deep.equal({ type: "unicast", destination: "10.0.1.12", gateway: null, device: "fab0", source: null, from: "10.0.1.11", table: null, mtu: null });
  });

  it("keeps the route's own MTU, from the cache line or inline, but not a learned path-MTU exception", () => {
    // As iproute2 printed it here after `ip route add 198.18.0.17/32 dev fab0 src 198.18.0.16 mtu 1400`.
    expect(parseRouteGet("198.18.0.17 from 198.18.0.16 dev fab0 uid 0 \n    cache mtu 1400 \n")).to.include({ device: "fab0", from: "198.18.0.16", mtu: 1400 });
    expect(parseRouteGet("10.0.1.12 from 10.0.1.11 dev fab0 uid 0 \n    cache mtu lock 1280 \n").mtu).to.equal(1280);
    expect(parseRouteGet("fd00::12 from fd00::11 dev fab0 proto kernel src fd00::11 metric 256 mtu 1400 pref medium").mtu).to.equal(1400);
    expect(parseRouteGet("10.0.1.12 from 10.0.1.11 dev fab0 uid 0 \n    cache expires 297sec mtu 1450 \n").mtu).to.equal(null);
  });

  it("refuses text that is not a route", () => {
    const e = thrown(() => parseRouteGet("RTNETLINK answers: Network is unreachable"));
    expect(e.code).to.equal("NARWHAL_FABRIC_FINGERPRINT");
    expect(e.message).to.equal('not an `ip route get` answer: "RTNETLINK answers: Network is unreachable"');
  });
});

describe("link fingerprint", () => {
  const tcp: LinkFingerprintInputs = {
    transport: "tcp",
    source: { host: "gpu-a", interface: "fab0", address: "10.0.1.11" },
    destination: { host: "gpu-b", address: "10.0.1.12" },
    mtu: 9000,
    route: "10.0.1.12 from 10.0.1.11 dev fab0 uid 0 \n    cache \n",
  };
  const port = (gid: string) => ({ hca: "mlx5_0", port: 1, gidIndex: 3, gid });
  const rdma: LinkFingerprintInputs = {
    ...tcp,
    transport: "ucx_rdma",
    rdma: { source: port("0000:0000:0000:0000:0000:ffff:0a00:010b"), destination: port("0000:0000:0000:0000:0000:ffff:0a00:010c") },
  };

  it("records interface, addresses, MTU, route fields and transport, with a digest and no problems", () => {
    const r = linkFingerprint(tcp);
    expect(r.fingerprint).to.deep.equal({
      transport: "tcp",
      source: { host: "gpu-a", interface: "fab0", address: "10.0.1.11" },
      destination: { host: "gpu-b", address: "10.0.1.12" },
      mtu: 9000,
      route: { type: "unicast", destination: "10.0.1.12", gateway: null, device: "fab0", source: null, from: "10.0.1.11", table: null, mtu: null },
      rdma: null,
    });
    expect(r.digest).to.match(/^sha256:[0-9a-f]{64}$/);
    expect(r.problems).to.deep.equal([]);
  });

  it("keeps its digest when only the route cache or the caller's uid changed", () => {
    const again = linkFingerprint({ ...tcp, route: "10.0.1.12 from 10.0.1.11 dev fab0 uid 1000 \n    cache expires 120sec \n" });
    expect(again.digest).to.equal(linkFingerprint(tcp).digest);
    expect(linkFingerprint({ ...tcp, route: parseRouteGet(tcp.route as string) }).digest).to.equal(linkFingerprint(tcp).digest);
  });

  it("changes its digest with each measured input", () => {
    const base = linkFingerprint(tcp).digest;
    const variants: LinkFingerprintInputs[] = [
      { ...tcp, mtu: 1500 },
      { ...tcp, source: { ...tcp.source, address: "10.0.1.21" }, route: "10.0.1.12 from 10.0.1.21 dev fab0 uid 0" },
      { ...tcp, destination: { ...tcp.destination, address: "10.0.1.13" }, route: "10.0.1.13 from 10.0.1.11 dev fab0 uid 0" },
      { ...tcp, source: { ...tcp.source, interface: "fab1" }, route: "10.0.1.12 from 10.0.1.11 dev fab1 uid 0" },
      { ...tcp, route: "10.0.1.12 from 10.0.1.11 via 10.0.1.1 dev fab0 uid 0" },
      { ...tcp, route: "10.0.1.12 from 10.0.1.11 dev fab0 uid 0 \n    cache mtu 1400 \n" },
      rdma,
    ];
    const digests = variants.map((v) => linkFingerprint(v).digest);
    expect(new Set([base, ...digests]).size).to.equal(variants.length + 1);
  });

  it("needs both RDMA ports for ucx_rdma, and normalises GID spelling", () => {
    const r = linkFingerprint(rdma);
    expect(r.fingerprint.rdma).to.deep.equal(rdma.rdma);
    const upper = linkFingerprint({ ...rdma, rdma: { source: port("0:0:0:0:0:FFFF:0A00:010B"), destination: rdma.rdma!.destination } });
    expect(upper.digest).to.equal(r.digest);
    expect(linkFingerprint({ ...rdma, rdma: { ...rdma.rdma!, source: { ...rdma.rdma!.source, gidIndex: 1 } } }).digest).to.not.equal(r.digest);
    const e = thrown(() => linkFingerprint({ ...rdma, rdma: undefined }));
    expect(e.code).to.equal("NARWHAL_FABRIC_FINGERPRINT");
    expect(e.message).to.equal("cannot fingerprint link gpu-a->gpu-b: rdma.source is missing, rdma.destination is missing");
  });

  it("ignores RDMA ports on a TCP link", () => {
    expect(linkFingerprint({ ...tcp, rdma: rdma.rdma }).digest).to.equal(linkFingerprint(tcp).digest);
  });

  it("says when the route does not take the fabric path", () => {
    const r = linkFingerprint({ ...tcp, route: "10.0.1.12 via 192.0.2.1 dev eth0 src 192.0.2.2 uid 0 \n    cache " });
    expect(r.problems).to.deep.equal([
      "the route leaves by eth0, not the fabric interface fab0",
      "the route's source address is 192.0.2.2, not the fabric address 10.0.1.11",
    ]);
    expect(linkFingerprint({ ...tcp, route: "local 10.0.1.12 dev lo src 10.0.1.12 uid 0" }).problems).to.deep.equal([
      "the route leaves by lo, not the fabric interface fab0",
      "the route's source address is 10.0.1.12, not the fabric address 10.0.1.11",
      "the route is of type local, not unicast: the traffic would not cross the fabric",
    ]);
    expect(linkFingerprint({ ...tcp, route: "10.0.1.13 from 10.0.1.11 dev fab0 uid 0" }).problems).to.deep.equal([
      "the route resolves 10.0.1.13, not the destination address 10.0.1.12",
    ]);
  });

  it("refuses malformed inputs, naming each", () => {
    const e = thrown(() => linkFingerprint({ ...tcp, mtu: 0, source: { ...tcp.source, interface: "" } }));
    expect(e.message).to.equal("cannot fingerprint link gpu-a->gpu-b: source.interface is empty, mtu 0 (68-65536)");
  });
});
