import { expect } from "chai";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { rdmaFigure, tcpFigure } from "../../../lib/fabric/edge-figure";
import type { RdmaRun, Run } from "../../../lib/fabric/edge-measure";

const fixture = (name: string) => readFileSync(join(__dirname, "fixtures", name), "utf8");
const ends = { source: { alias: "sim1" }, destination: { alias: "sim2" } };
const run = (stdout: string, exit = 0, stderr = "", serverLog = ""): Run =>
  ({ client: { stdout, stderr, exit }, serverLog, startedAt: "2026-01-01T00:00:00.000Z", endedAt: "2026-01-01T00:00:02.000Z", steps: [] }) as unknown as Run;

describe("a fabric edge run's figure", () => {
  it("keeps iperf3's figure, every sample and the run's window", () => {
    const f = tcpFigure(ends, run(fixture("iperf3-loopback-t2.json")));
    if (!("parsed" in f)) throw new Error(f.reason);
    expect(f.parsed.measurement.gbps).to.be.above(0);
    expect(f.parsed.measurement.samplesGbps).to.deep.equal(f.parsed.result.samplesGbps);
    expect(f.parsed.measurement).to.include({ startedAt: "2026-01-01T00:00:00.000Z", endedAt: "2026-01-01T00:00:02.000Z", retransmits: f.parsed.result.retransmits });
  });

  it("has none when iperf3 failed, naming the client's host, exit and iperf3's own error", () => {
    expect(tcpFigure(ends, run(fixture("iperf3-refused.json"), 1))).to.deep.equal({
      code: "NARWHAL_FABRIC_TOOL_FAILED",
      reason: "the iperf3 client on sim1 exited 1: iperf3 failed: unable to connect to server: Connection refused",
    });
  });

  it("has none when ib_write_bw failed, quoting the client's and the server's last lines", () => {
    const f = rdmaFigure(ends, run("", 1, "Couldn't connect to 10.0.1.12:18515\nUnable to init the socket connection", "waiting\nno client") as RdmaRun);
    expect(f).to.deep.equal({
      code: "NARWHAL_FABRIC_TOOL_FAILED",
      reason: "the ib_write_bw client on sim1 exited 1: Couldn't connect to 10.0.1.12:18515 | Unable to init the socket connection; the server on sim2 said: waiting | no client",
    });
  });
});
