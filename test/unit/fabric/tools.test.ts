import { expect } from "chai";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { budgetFor, verdict } from "../../../lib/fabric/budget";
import type { FabricError } from "../../../lib/fabric/errors";
import { ibWriteBwCommands, ibWriteBwMeasurement, parseIbWriteBw } from "../../../lib/fabric/ib-write-bw";
import { iperf3Commands, iperf3Measurement, parseIperf3Json } from "../../../lib/fabric/iperf3";
import { GQA_TP1, MHA_TP1 } from "./layouts";

const FIXTURES = join(__dirname, "fixtures");
const fixture = (name: string) => readFileSync(join(FIXTURES, name), "utf8");

function thrown(fn: () => unknown): FabricError {
  try {
    fn();
  } catch (err) {
    return err as FabricError;
  }
  throw new Error("expected an error");
}

describe("ib_write_bw", () => {
  const settings = {
    server: { hca: "mlx5_1", port: 1, gidIndex: 3 },
    client: { hca: "mlx5_0", port: 1, gidIndex: 3 },
    serverAddress: "10.0.1.12",
    size: 65536,
    iterations: 5000,
  };

  it("builds server and client argv, the client naming the server's address", () => {
    const c = ibWriteBwCommands(settings);
    expect(c.server).to.deep.equal(["ib_write_bw", "-d", "mlx5_1", "-i", "1", "-x", "3", "-s", "65536", "-n", "5000", "-p", "18515", "-F", "--report_gbits"]);
    expect(c.client).to.deep.equal(["ib_write_bw", "-d", "mlx5_0", "-i", "1", "-x", "3", "-s", "65536", "-n", "5000", "-p", "18515", "-F", "--report_gbits", "10.0.1.12"]);
    expect(c.settings).to.deep.equal({ ...settings, tcpPort: 18515, reportGbits: true });
  });

  it("reports in MB/sec when asked, on another side-channel port", () => {
    const c = ibWriteBwCommands({ ...settings, tcpPort: 18600, reportGbits: false });
    expect(c.client).to.deep.equal(["ib_write_bw", "-d", "mlx5_0", "-i", "1", "-x", "3", "-s", "65536", "-n", "5000", "-p", "18600", "-F", "10.0.1.12"]);
  });

  it("refuses settings out of range, naming each", () => {
    const e = thrown(() => ibWriteBwCommands({ ...settings, client: { hca: "mlx5_0; rm", port: 0, gidIndex: 300 }, iterations: 4, serverAddress: "a b" }));
    expect(e.code).to.equal("NARWHAL_FABRIC_TOOL_SETTINGS");
    expect(e.message).to.equal(
      'ib_write_bw settings out of range: client.hca "mlx5_0; rm" (an HCA name such as mlx5_0), client.port 0 (1 or more), client.gidIndex 300 (0-64, what ib_write_bw\'s -x accepts), ' +
        'serverAddress "a b" (an address or host name), iterations 4 (5 or more)',
    );
  });

  it("parses the MB/sec table (2^20 bytes per second) and the banner", () => {
    const r = parseIbWriteBw(fixture("ib_write_bw-client-mbs.txt"));
    expect(r.unit).to.equal("MB/sec");
    expect(r.rows).to.have.length(1);
    expect(r.rows[0]).to.include({ bytes: 65536, iterations: 5000, peak: 11029.12, average: 11027.85, msgRateMpps: 0.176446 });
    // 11027.85 × 1048576 B/s × 8 = 92508310732.8 bit/s
    expect(r.averageGbps).to.be.closeTo(92.5083107328, 1e-9);
    expect(r.rows[0].peakGbps).to.be.closeTo(92.51896426496, 1e-9);
    expect(r).to.deep.include({
      device: "mlx5_0",
      transportType: "IB",
      connectionType: "RC",
      linkType: "Ethernet",
      mtu: 4096,
      gidIndex: 3,
      qps: 1,
      localGid: "00:00:00:00:00:00:00:00:00:00:255:255:10:00:01:11",
      remoteGid: "00:00:00:00:00:00:00:00:00:00:255:255:10:00:01:12",
    });
  });

  it("parses the --report_gbits table, skipping perftest's CPU-frequency warning", () => {
    const r = parseIbWriteBw(fixture("ib_write_bw-client-gbits.txt"));
    expect(r.unit).to.equal("Gb/sec");
    expect(r.rows).to.deep.equal([{ bytes: 65536, iterations: 5000, peak: 92.51, average: 92.48, msgRateMpps: 0.176392, peakGbps: 92.51, averageGbps: 92.48 }]);
    expect(ibWriteBwMeasurement(r)).to.deep.equal({ gbps: 92.48, samples: 5000 });
    expect(verdict(ibWriteBwMeasurement(r), budgetFor(MHA_TP1))).to.equal("met");
  });

  it("takes the last row of an all-sizes run", () => {
    const text = [
      " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
      " 2          5000           0.058511            0.058226            3.639132",
      " 4096       5000             61.02              60.87  \t\t   1.857614",
      " 8388608    5000             92.77              92.76  \t\t   0.001382",
      "-".repeat(87),
    ].join("\n");
    const r = parseIbWriteBw(text);
    expect(r.rows.map((x) => x.bytes)).to.deep.equal([2, 4096, 8388608]);
    expect(r.averageGbps).to.equal(92.76);
    expect(r.device).to.equal(null);
  });

  it("refuses the server's side, which prints the header but no result", () => {
    const e = thrown(() => parseIbWriteBw(fixture("ib_write_bw-server.txt")));
    expect(e.code).to.equal("NARWHAL_FABRIC_TOOL_OUTPUT");
    expect(e.message).to.equal("ib_write_bw printed its result header but no result row");
  });

  it("refuses output without a result table, quoting how it ended", () => {
    const e = thrown(() => parseIbWriteBw(" Couldn't connect to 10.0.1.12:18515\nUnable to open file descriptor for socket connection Unable to init the socket connection\n"));
    expect(e.code).to.equal("NARWHAL_FABRIC_TOOL_OUTPUT");
    expect(e.message).to.equal(
      'ib_write_bw printed no result table (is this the client\'s output?); it ended with: "Couldn\'t connect to 10.0.1.12:18515 | Unable to open file descriptor for socket connection Unable to init the socket connection"',
    );
  });
});

describe("iperf3", () => {
  it("builds server and client argv bound to the fabric addresses", () => {
    const c = iperf3Commands({ serverAddress: "10.0.1.12", clientAddress: "10.0.1.11", port: 5201, durationS: 2 });
    expect(c.server).to.deep.equal(["iperf3", "-s", "-B", "10.0.1.12", "-p", "5201", "-1"]);
    expect(c.client).to.deep.equal(["iperf3", "-c", "10.0.1.12", "-B", "10.0.1.11", "-p", "5201", "-t", "2", "-J"]);
    expect(iperf3Commands({ serverAddress: "fd00::2", clientAddress: "fd00::1", port: 5201, durationS: 5, streams: 4 }).client).to.deep.equal([
      "iperf3", "-c", "fd00::2", "-B", "fd00::1", "-p", "5201", "-t", "5", "-P", "4", "-J",
    ]);
    expect(thrown(() => iperf3Commands({ serverAddress: "10.0.1.12", clientAddress: "10.0.1.11", port: 0, durationS: 0.5 })).message).to.equal(
      "iperf3 settings out of range: port 0 (1-65535), durationS 0.5 (whole seconds, 1 or more)",
    );
  });

  it("parses a recorded -J result: received rate, per-interval samples, retransmits", () => {
    const r = parseIperf3Json(fixture("iperf3-loopback-t2.json"));
    expect(r).to.deep.include({
      version: "iperf 3.12",
      protocol: "TCP",
      streams: 1,
      durationS: 2,
      reverse: false,
      localHost: "127.0.0.1",
      localPort: 58203,
      remoteHost: "127.0.0.1",
      remotePort: 5391,
      receivedBytes: 4278059008,
      retransmits: 9,
    });
    expect(r.receivedGbps).to.be.closeTo(17.107420293187467, 1e-12);
    expect(r.sentGbps).to.be.closeTo(17.110773060903295, 1e-12);
    expect(r.intervals.map((i) => [i.start, i.end, i.bytes, i.retransmits, i.omitted])).to.deep.equal([
      [0, 1.000363, 2343436288, 6, false],
      [1.000363, 2.000171, 1934622720, 3, false],
    ]);
    expect(r.samplesGbps).to.have.length(2);
    expect(r.samplesGbps[0]).to.be.closeTo(18.740687578961715, 1e-12);
    expect(r.samplesGbps[1]).to.be.closeTo(15.47995370307313, 1e-12);
    expect(r.cpu!.hostTotal).to.be.closeTo(23.889282562438346, 1e-12);
  });

  it("gives a measurement a verdict reads", () => {
    const m = iperf3Measurement(parseIperf3Json(fixture("iperf3-loopback-t2.json")));
    expect(verdict(m, budgetFor(GQA_TP1))).to.equal("met");
    expect(verdict(m, budgetFor(MHA_TP1, { promptTokens: 4096, handoffRate: 1, burst: 1, budgetS: 1, headroom: 1.25 }))).to.equal("below");
  });

  it("leaves --omit warm-up intervals out of the samples", () => {
    const doc = JSON.parse(fixture("iperf3-loopback-t2.json"));
    doc.intervals[0].sum.omitted = true;
    const r = parseIperf3Json(JSON.stringify(doc));
    expect(r.intervals).to.have.length(2);
    expect(r.samplesGbps).to.have.length(1);
    expect(r.samplesGbps[0]).to.be.closeTo(15.47995370307313, 1e-12);
  });

  it("reports iperf3's own error", () => {
    const e = thrown(() => parseIperf3Json(fixture("iperf3-refused.json")));
    expect(e.code).to.equal("NARWHAL_FABRIC_TOOL_FAILED");
    expect(e.message).to.equal("iperf3 failed: unable to connect to server: Connection refused");
  });

  it("refuses a result without end.sum_received, and text that is not JSON", () => {
    const doc = JSON.parse(fixture("iperf3-loopback-t2.json"));
    delete doc.end.sum_received;
    const e = thrown(() => parseIperf3Json(JSON.stringify(doc)));
    expect(e.code).to.equal("NARWHAL_FABRIC_TOOL_OUTPUT");
    expect(e.message).to.equal("iperf3 -J output has no end.sum_received (an interrupted run, or a UDP test): nothing was measured");
    expect(thrown(() => parseIperf3Json("iperf3: error - unable to connect")).message).to.equal('iperf3 -J output is not a JSON object: "iperf3: error - unable to connect"');
  });

  it("tolerates a line of noise around the JSON document", () => {
    const r = parseIperf3Json(`Warning: Permanently added 'gpu-b' to the list of known hosts.\n${fixture("iperf3-loopback-t2.json")}`);
    expect(r.retransmits).to.equal(9);
  });
});
