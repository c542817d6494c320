import { expect } from "chai";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { addressLines, cHex, reportRow, RESULT_LINE, SERVER_BANNER, tableHeader, testInfo, type TestInfo } from "../../../sim/rdma/perftest-format";
import { gidEntries, gidText, ipv4Gid, macGid, nodeGuid } from "../../../sim/rdma/sysfs";
import { parseIbWriteBw } from "../../../lib/fabric/ib-write-bw";

/**
 * The ib_write_bw stand-in prints what perftest 6.29's format strings print: checked against the
 * constructed client run of the RDMA reference (rdma-facts §2.3, TABs kept), and read back by the
 * program's own parser.
 */
const CLIENT_SAMPLE = [
  "---------------------------------------------------------------------------------------",
  "                    RDMA_Write BW Test",
  " Dual-port       : OFF\t\tDevice         : mlx5_0",
  " Number of qps   : 1\t\tTransport type : IB",
  " Connection type : RC\t\tUsing SRQ      : OFF",
  " PCIe relax order: ON\t\tLock-free      : OFF",
  " ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF",
  " TX depth        : 128",
  " CQ Moderation   : 1",
  " CQE Poll Batch  : Dynamic",
  " Mtu             : 4096[B]",
  " Link type       : Ethernet",
  " GID index       : 3",
  " Max inline data : 0[B]",
  " rdma_cm QPs\t : OFF",
  " Data ex. method : Ethernet",
  " NUMA node       : 0",
  "---------------------------------------------------------------------------------------",
  " local address: LID 0000 QPN 0x00c7 PSN 0x3a91f2 RKey 0x1fe9d4 VAddr 0x007f3c8a000000",
  " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:01:12",
  " remote address: LID 0000 QPN 0x00b3 PSN 0x5c02e1 RKey 0x1fd0c7 VAddr 0x007fa1d4200000",
  " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:01:11",
  "---------------------------------------------------------------------------------------",
  " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
  " 1048576    5000             185.41             185.37 \t\t     0.022098",
  "---------------------------------------------------------------------------------------",
  "",
].join("\n");

const CLIENT_INFO: TestInfo = { device: "mlx5_0", qps: 1, transportType: "IB", client: true, txDepth: 128, cqMod: 1, mtu: 4096, linkType: "Ethernet", gidIndex: 3, maxInline: 0, numaNode: 0 };

describe("sim: the ib_write_bw stand-in's output", () => {
  it("prints the reference's client run byte for byte", () => {
    const text =
      testInfo(CLIENT_INFO) +
      addressLines("local", { lid: 0, qpn: 0xc7, psn: 0x3a91f2, rkey: 0x1fe9d4, vaddr: 0x7f3c8a000000n, gid: ipv4Gid("10.0.1.12") }) +
      addressLines("remote", { lid: 0, qpn: 0xb3, psn: 0x5c02e1, rkey: 0x1fd0c7, vaddr: 0x7fa1d4200000n, gid: ipv4Gid("10.0.1.11") }) +
      tableHeader(true) +
      reportRow({ size: 1048576, iters: 5000, peak: 185.41, average: 185.37, msgRateMpps: 0.022098 }, true) +
      RESULT_LINE;
    expect(text).to.equal(CLIENT_SAMPLE);
    expect(RESULT_LINE).to.equal(`${"-".repeat(87)}\n`);
  });

  it("prints the server's banner and leaves TX depth out of its header; InfiniBand without a GID prints no GID lines", () => {
    expect(SERVER_BANNER).to.equal("\n************************************\n* Waiting for client to connect... *\n************************************\n");
    const server = testInfo({ ...CLIENT_INFO, client: false });
    expect(server).to.not.include("TX depth");
    expect(server.split("\n")).to.have.length(CLIENT_SAMPLE.split("\n").indexOf(" local address: LID 0000 QPN 0x00c7 PSN 0x3a91f2 RKey 0x1fe9d4 VAddr 0x007f3c8a000000"));
    const ib = testInfo({ ...CLIENT_INFO, linkType: "IB", gidIndex: null });
    expect(ib).to.include(" Link type       : IB\n").and.not.include("GID index");
    expect(addressLines("local", { lid: 2, qpn: 0x107, psn: 0, rkey: 0x1fefbc, vaddr: 0n, gid: null })).to.equal(
      " local address: LID 0x02 QPN 0x0107 PSN 000000 RKey 0x1fefbc VAddr 0000000000000000\n",
    );
  });

  it("follows C's conversions: %#0Nx prints zero without 0x, rows switch to six decimals below 0.1 Gb/s, MiB/sec without --report_gbits", () => {
    expect([cHex(0, 4), cHex(0x1a, 4), cHex(0xc7, 6), cHex(0x3a91f2, 6)]).to.deep.equal(["0000", "0x1a", "0x00c7", "0x3a91f2"]);
    expect(reportRow({ size: 2, iters: 5000, peak: 0.058511, average: 0.058226, msgRateMpps: 3.639132 }, true)).to.equal(" 2          5000           0.058511            0.058226            3.639132\n");
    expect(tableHeader(false)).to.equal(`${RESULT_LINE} #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n`);
    const mib = parseIbWriteBw(tableHeader(false) + reportRow({ size: 65536, iters: 5000, peak: 11029.12, average: 11027.85, msgRateMpps: 0.176446 }, false));
    expect(mib.unit).to.equal("MiB/sec");
    expect(mib.averageGbps).to.be.closeTo((11027.85 * 1048576 * 8) / 1e9, 1e-9);
  });

  it("is read back by the program's parser", () => {
    const r = parseIbWriteBw(CLIENT_SAMPLE);
    expect(r).to.deep.include({ unit: "Gb/sec", averageGbps: 185.37, device: "mlx5_0", linkType: "Ethernet", mtu: 4096, gidIndex: 3, qps: 1 });
    expect([r.localGid, r.remoteGid]).to.deep.equal(["00:00:00:00:00:00:00:00:00:00:255:255:10:00:01:12", "00:00:00:00:00:00:00:00:00:00:255:255:10:00:01:11"]);
  });
});

describe("sim: the simulated HCA's GID table", () => {
  it("lays GIDs out as mlx5 does for one IPv4 address: link-local v1/v2 from the MAC, then the address as v1/v2 (RoCE v2 at index 3)", () => {
    expect(gidText(macGid("0c:42:a1:12:34:56"))).to.equal("fe80:0000:0000:0000:0e42:a1ff:fe12:3456");
    expect(nodeGuid("0c:42:a1:12:34:56")).to.equal("0c42:a103:0012:3456");
    expect(gidEntries({ alias: "sim40", name: "mlx5_0", netdev: "fab0", mac: "02:4e:57:00:00:28", addresses: ["198.18.0.50"] })).to.deep.equal([
      { index: 0, gid: "fe80:0000:0000:0000:004e:57ff:fe00:0028", type: "IB/RoCE v1" },
      { index: 1, gid: "fe80:0000:0000:0000:004e:57ff:fe00:0028", type: "RoCE v2" },
      { index: 2, gid: "0000:0000:0000:0000:0000:ffff:c612:0032", type: "IB/RoCE v1" },
      { index: 3, gid: "0000:0000:0000:0000:0000:ffff:c612:0032", type: "RoCE v2" },
    ]);
  });
});

describe("sim: the ib_write_bw stand-in's command line (run for real)", function () {
  this.timeout(30_000);
  const run = (...args: string[]) => {
    const root = path.resolve(__dirname, "../../..");
    const r = spawnSync(process.execPath, ["-r", path.join(root, "tools/ts-require.js"), path.join(root, "sim/rdma/ib-write-bw.ts"), ...args], { encoding: "utf8" });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  it("refuses what perftest's parser refuses, with its messages and exit status 1", () => {
    expect(run("-x", "65")).to.deep.equal({ code: 1, stdout: "", stderr: " Gid index should be between 0 and 64\n Parser function exited with Error\n" });
    expect(run("-x", "3a")).to.deep.equal({ code: 1, stdout: "", stderr: " Gid index argument 3a should be uint8_t\n Parser function exited with Error\n" });
    expect(run("-n", "4")).to.deep.equal({ code: 1, stdout: "", stderr: " Iteration num should be between 5 and 4294967296\n Parser function exited with Error\n" });
    expect(run("--bogus")).to.deep.equal({ code: 1, stdout: "", stderr: "ib_write_bw: unrecognized option '--bogus'\n Parser function exited with Error\n" });
    expect(run("-V")).to.deep.equal({ code: 1, stdout: "Version: 6.29\n", stderr: "" });
  });
});
