import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { provider } from "../../dynamic-providers/fabric-edge/provider";
import type { FabricEdgeInputs, FabricEdgeOutputs } from "../../dynamic-providers/fabric-edge/schema";
import { evidenceRoot } from "../../lib/evidence/store";
import { runInHost, setRdmaPortState, simDown, simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import { rejection } from "../support/rejection";
import { edgeBetween } from "./support/fabric-edge";

/**
 * A `ucx_rdma` edge measured with ib_write_bw between two simulated hosts of this file's own, each with
 * an HCA (sim40 and sim41: mlx5_0, RoCE on fab0, GID index 3 = its IPv4 address as RoCE v2), called as
 * the engine calls the provider.
 */
const STACK = "provider-tests";
const HOSTS = ["sim40", "sim41"];
const PORT1 = "/sys/class/infiniband/mlx5_0/ports/1";
let hosts: Map<string, SimHost>;

function inputs(from: string, to: string, extra: Partial<FabricEdgeInputs> = {}): FabricEdgeInputs {
  return {
    ...edgeBetween(hosts.get(from)!, hosts.get(to)!, STACK),
    transport: "ucx_rdma",
    rdma: { source: { hca: "mlx5_0", port: 1, gidIndex: 3 }, destination: { hca: "mlx5_0", port: 1, gidIndex: 3 } },
    tool: { size: 65536, iterations: 5000 },
    iperfPort: 5201,
    rdmaPort: 18515,
    requiredGbps: 0.5,
    ...extra,
  };
}

const readEvidence = (relativePath: string): Record<string, any> => JSON.parse(fs.readFileSync(path.join(evidenceRoot(process.cwd(), STACK), relativePath), "utf8"));

/** One port counter as the host's sysfs shows it. */
async function counter(alias: string, file: string): Promise<number> {
  return Number((await runInHost(alias, ["cat", `${PORT1}/${file}`])).stdout.trim());
}

/** ib_write_bw anywhere on these hosts: a socket, a process bound to a fabric address, a run folder. */
async function toolLeft(): Promise<string[]> {
  const found: string[] = [];
  for (const h of hosts.values()) {
    const sockets = (await runInHost(h.alias, "ss -Htanp")).stdout;
    found.push(...sockets.split("\n").filter((l) => l.includes('"ib_write_bw"')).map((l) => `${h.alias}: ${l}`));
    const dirs = (await runInHost(h.alias, "ls -d /tmp/narwhal-fabric.* 2>/dev/null", { allowFail: true })).stdout.trim();
    if (dirs) found.push(`${h.alias}: ${dirs}`);
  }
  return found;
}

describe("providers: RDMA fabric edges measured with ib_write_bw between simulated HCAs", function () {
  this.timeout(180_000);
  let measured: FabricEdgeOutputs;

  before(async () => {
    const fleet = await simUp({ hosts: 41, aliases: HOSTS, rdma: { sim40: ["mlx5_0"], sim41: ["mlx5_0"] } });
    hosts = new Map(fleet.hosts.map((h) => [h.alias, h]));
  });
  after(async () => {
    await simDown({ aliases: HOSTS });
  });

  it("measures one directed edge between the HCA ports, with both ports' counters before and after in its evidence", async () => {
    const before = { xmit: await counter("sim40", "counters/port_xmit_data"), rcv: await counter("sim41", "counters/port_rcv_data") };
    measured = (await provider.create(inputs("sim40", "sim41"))).outs as FabricEdgeOutputs;
    expect(measured.verdict).to.equal("met");
    expect(measured.measurement.gbps).to.be.greaterThan(0.5);
    expect(measured.measurement.samplesGbps).to.deep.equal([measured.measurement.gbps]);
    expect(measured.measurement.retransmits).to.be.a("number");
    expect(measured.fingerprint.forward.rdma!.source).to.deep.equal({
      hca: "mlx5_0",
      port: 1,
      gidIndex: 3,
      gid: "0000:0000:0000:0000:0000:ffff:c612:0032",
      gidType: "RoCE v2",
      netdev: "fab0",
      linkLayer: "Ethernet",
      state: "4: ACTIVE",
      rate: "200 Gb/sec (4X HDR)",
      activeMtu: 1024,
    });
    expect(measured.fingerprint.forward.rdma!.destination).to.include({ gid: "0000:0000:0000:0000:0000:ffff:c612:0033" });
    expect(measured.fingerprint.forward.rdmaRoute).to.include({ destination: "198.18.0.51", device: "fab0", from: "198.18.0.50" });
    expect(measured.observed).to.deep.equal(measured.measured);
    expect(await toolLeft()).to.deep.equal([]);

    const record = readEvidence(measured.evidence.relativePath);
    expect(record.verdict).to.deep.equal({ status: "pass", reasons: [] });
    expect(record.subject).to.deep.equal({ kind: "edge", alias: "sim40->sim41" });
    const payload = 65536 * 5000;
    const c = record.observations.counters;
    expect(c.sourceXmitBytes).to.be.at.least(payload);
    expect(c.destinationRcvBytes).to.be.at.least(payload);
    // The counters on the hosts moved by what the record says (4-byte units).
    expect((await counter("sim40", "counters/port_xmit_data")) - before.xmit).to.equal(c.sourceXmitBytes / 4);
    expect((await counter("sim41", "counters/port_rcv_data")) - before.rcv).to.equal(c.destinationRcvBytes / 4);
    expect(c.source.before.hwCounters).to.have.property("local_ack_timeout_err");
    expect(record.observations.report).to.deep.include({ unit: "Gb/sec", device: "mlx5_0", linkType: "Ethernet", mtu: 1024, gidIndex: 3 });
    expect(record.observations.report.localGid).to.equal("00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:50");
    expect(record.observations.mtu).to.deep.equal({ reported: 1024, expected: 1024 });
    expect(record.observations.client.stdout).to.include("                    RDMA_Write BW Test\n");
    expect(record.observations.serverLog).to.include("* Waiting for client to connect... *");
    expect(record.observations.hca.destination).to.deep.include({ hca: "mlx5_0", port: 1, state: "4: ACTIVE", linkLayer: "Ethernet" });
    // No engine runs on either host: nothing could have shared the link.
    expect(record.observations.reservation).to.deep.equal({ idle: true, engines: [], reasons: [], watched: [], unread: [] });
    expect(measured.reservation).to.deep.equal({ idle: true, reasons: [], foreign: {} });
    expect(record.commands.find((x: { argv?: string[] }) => x.argv)?.argv).to.deep.equal([
      "timeout", "-k", "5", "60", "ib_write_bw", "-d", "mlx5_0", "-i", "1", "-x", "3", "-s", "65536", "-n", "5000", "-p", "18515", "-F", "--report_gbits", "198.18.0.51",
    ]);
    expect(JSON.stringify(record)).to.not.include("PRIVATE KEY");
  });

  it("takes the GID UCX would pick when none is configured, and passes it to -x", async () => {
    const auto = (await provider.create(inputs("sim41", "sim40", { rdma: { source: { hca: "mlx5_0", port: 1, gidIndex: null }, destination: { hca: "mlx5_0", port: 1, gidIndex: null } } }))).outs as FabricEdgeOutputs;
    expect(auto.fingerprint.forward.rdma!.source).to.include({ gidIndex: 3, gid: "0000:0000:0000:0000:0000:ffff:c612:0033" });
    expect(readEvidence(auto.evidence.relativePath).observations.tool.server.join(" ")).to.equal("ib_write_bw -d mlx5_0 -i 1 -x 3 -s 65536 -n 5000 -p 18515 -F --report_gbits");
  });

  it("refuses a port that is down before measuring, naming host, HCA and port; a refresh sees the edge's path move, and move back", async () => {
    const xmit = await counter("sim40", "counters/port_xmit_data");
    setRdmaPortState("sim41", "down");
    try {
      const e = await rejection(provider.create(inputs("sim40", "sim41")));
      expect(e.code).to.equal("NARWHAL_FABRIC_RDMA");
      expect(e.message).to.equal(
        "edge sim40->sim41: host sim41: HCA mlx5_0 port 1 is 1: DOWN (phys_state 3: Disabled), not 4: ACTIVE; RDMA traffic cannot use it: " +
          "bring the port up (cable, netdev fab0, subnet manager) before measuring. Diagnose HCA/GID; nothing was measured",
      );
      expect(await counter("sim40", "counters/port_xmit_data")).to.equal(xmit);
      const seen = (await provider.read!(measured.evidence.digest, measured)).props as FabricEdgeOutputs;
      expect(seen.observed.forwardPath).to.not.equal(measured.measured.forwardPath);
      expect(seen.observed.returnPath).to.not.equal(measured.measured.returnPath);
      expect(seen.observedProblems).to.deep.equal([
        "host sim41: HCA mlx5_0 port 1 is 1: DOWN (phys_state 3: Disabled), not 4: ACTIVE; RDMA traffic cannot use it: bring the port up (cable, netdev fab0, subnet manager) before measuring",
      ]);
      expect((await provider.diff!(measured.evidence.digest, seen, inputs("sim40", "sim41"))).replaces).to.deep.equal(["forwardPath", "returnPath"]);
    } finally {
      setRdmaPortState("sim41", "active");
    }
    const back = (await provider.read!(measured.evidence.digest, measured)).props as FabricEdgeOutputs;
    expect(back.observed).to.deep.equal(measured.measured);
    expect(await toolLeft()).to.deep.equal([]);
  });

  it("refuses a GID index that is empty or past the table, naming host, HCA and port", async () => {
    const empty = await rejection(provider.create(inputs("sim40", "sim41", { rdma: { source: { hca: "mlx5_0", port: 1, gidIndex: 3 }, destination: { hca: "mlx5_0", port: 1, gidIndex: 9 } } })));
    expect(empty.code).to.equal("NARWHAL_FABRIC_RDMA");
    expect(empty.message).to.match(/^edge sim40->sim41: host sim41: HCA mlx5_0 port 1 has no GID at index 9 \(the slot is empty, the all-zero GID\); set rdma\.gidIndex to one of: .*3 \(198\.18\.0\.51, RoCE v2\)\. Diagnose HCA\/GID; nothing was measured$/);
    const past = await rejection(provider.create(inputs("sim40", "sim41", { rdma: { source: { hca: "mlx5_0", port: 1, gidIndex: 255 }, destination: { hca: "mlx5_0", port: 1, gidIndex: 3 } } })));
    expect(past.message).to.match(/^edge sim40->sim41: host sim40: HCA mlx5_0 port 1 has no GID index 255: its GID table has 255 entries; /);
    const family = await rejection(provider.create(inputs("sim40", "sim41", { rdma: { source: { hca: "mlx5_0", port: 1, gidIndex: 1 }, destination: { hca: "mlx5_0", port: 1, gidIndex: 3 } } })));
    expect(family.message).to.include("GID index 1 on sim40 mlx5_0 port 1 is IPv6 (fe80:0000:0000:0000:004e:57ff:fe00:0028) but GID index 3 on sim41 mlx5_0 port 1 is IPv4");
    expect(await toolLeft()).to.deep.equal([]);
  });

  it("measures what the fabric carries: a throttled link is below its budget", async () => {
    await runInHost("sim40", ["tc", "qdisc", "add", "dev", "fab0", "root", "tbf", "rate", "200mbit", "burst", "64kb", "latency", "50ms"]);
    try {
      const slow = (await provider.create(inputs("sim40", "sim41", { tool: { size: 65536, iterations: 300 } }))).outs as FabricEdgeOutputs;
      expect(slow.measurement.gbps).to.be.below(0.25);
      expect(slow.verdict).to.equal("below");
      expect(slow.verdictReason).to.equal(`measured ${slow.measurement.gbps} Gbit/s is below the required 0.5 Gbit/s`);
    } finally {
      await runInHost("sim40", ["tc", "qdisc", "del", "dev", "fab0", "root"]);
    }
  });

  it("records an RDMA path that drops traffic while TCP works: the client's retries run out, and the sender's counters say so", async () => {
    const timeouts = await counter("sim40", "hw_counters/local_ack_timeout_err");
    await runInHost("sim41", ["iptables", "-w", "5", "-I", "INPUT", "-p", "tcp", "--dport", "4791", "-j", "DROP"]);
    try {
      const e = await rejection(provider.create(inputs("sim40", "sim41")));
      expect(e.code).to.equal("NARWHAL_FABRIC_TOOL_FAILED");
      expect(e.message).to.match(
        /^edge sim40->sim41: the ib_write_bw client on sim40 exited 1: Completion with error at client \| Failed status-transport retry counter exceeded \(12\): wr_id 0 syndrom 0x81 \| scnt=\d+, ccnt=0 \| Failed to complete run_iter_bw function successfully; the server on sim41 said: .*Failed to exchange data between server and clients\. Diagnose route, .*; the attempt is recorded in (fabric-edge\/[0-9a-f]{64}\.json)$/,
      );
      const record = readEvidence(/recorded in (\S+\.json)$/.exec(e.message)![1]);
      expect(record.verdict.status).to.equal("invalid");
      expect(record.observations.counters.retransmissionCounters).to.include({ "sim40 mlx5_0/1 local_ack_timeout_err": 8, "sim40 mlx5_0/1 req_transport_retries_exceeded": 1 });
      expect((await counter("sim40", "hw_counters/local_ack_timeout_err")) - timeouts).to.equal(8);
    } finally {
      await runInHost("sim41", ["iptables", "-w", "5", "-D", "INPUT", "-p", "tcp", "--dport", "4791", "-j", "DROP"]);
    }
    expect(await toolLeft()).to.deep.equal([]);
  });
});
