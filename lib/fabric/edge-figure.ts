/**
 * A run's figure, per transport, or why it has none: iperf3's JSON report (tcp), or ib_write_bw's report
 * checked against what was configured (device, GID index, both GIDs) and its port counters' growth
 * against the bytes written (ucx_rdma). No I/O: the FabricEdge provider runs, records and refuses.
 */
import type { RdmaRun, Run } from "./edge-measure";
import { rdmaReportProblems, tail, type EdgeMeasurement } from "./edge-outcome";
import type { FabricError, FabricErrorCode } from "./errors";
import { ibWriteBwMeasurement, parseIbWriteBw, type IbWriteBwReport } from "./ib-write-bw";
import { iperf3Measurement, parseIperf3Json, type Iperf3Result } from "./iperf3";
import { counterProblems } from "./rdma-edge";

/** The parsed report and the figure kept, or the refusal's code and reason (the record keeps the run either way). */
export type Figure<P> = { parsed: P & { measurement: EdgeMeasurement } } | { code: FabricErrorCode; reason: string };

interface Ends {
  source: { alias: string };
  destination: { alias: string };
}

export function tcpFigure(i: Ends, run: Run): Figure<{ result: Iperf3Result }> {
  let result: Iperf3Result;
  try {
    result = parseIperf3Json(run.client.stdout);
  } catch (err) {
    return { code: (err as FabricError).code ?? "NARWHAL_FABRIC_TOOL_OUTPUT", reason: `the iperf3 client on ${i.source.alias} exited ${run.client.exit}: ${(err as Error).message}` };
  }
  const m = iperf3Measurement(result);
  const { startedAt, endedAt } = run;
  return { parsed: { result, measurement: { gbps: m.gbps, samplesGbps: [...m.samples], sentGbps: result.sentGbps, retransmits: result.retransmits, startedAt, endedAt } } };
}

export function rdmaFigure(i: Ends, run: RdmaRun): Figure<{ report: IbWriteBwReport }> {
  let report: IbWriteBwReport | null = null;
  let unparsed = "";
  try {
    report = parseIbWriteBw(run.client.stdout);
  } catch (err) {
    unparsed = (err as Error).message;
  }
  if (run.client.exit !== 0 || report === null) {
    const said = tail(run.client.stderr) || unparsed || tail(run.client.stdout);
    const server = tail(run.serverLog, 4);
    const reason = `the ib_write_bw client on ${i.source.alias} exited ${run.client.exit}: ${said}${server ? `; the server on ${i.destination.alias} said: ${server}` : ""}`;
    return { code: "NARWHAL_FABRIC_TOOL_FAILED", reason };
  }
  const m = ibWriteBwMeasurement(report);
  const last = report.rows[report.rows.length - 1];
  const invalid = [...rdmaReportProblems(run.sides.rdma!, report), ...counterProblems(run.counters, last.bytes * last.iterations)];
  const measurement: EdgeMeasurement = {
    gbps: m.gbps,
    samplesGbps: [m.gbps],
    sentGbps: null,
    retransmits: run.counters.retransmits,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    ...(invalid.length ? { invalidReason: `the measurement did not run where it was configured to: ${invalid.join("; ")}` } : {}),
  };
  return { parsed: { report, measurement } };
}
