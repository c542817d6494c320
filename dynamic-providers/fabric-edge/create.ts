/**
 * `create` of either transport, under the measurement lock (lib/fabric/measurement-lock.ts): one measurement
 * (lib/fabric/edge-measure.ts), its output parsed, and one evidence record with everything it was measured against and
 * saw. A `ucx_rdma` edge's ib_write_bw report is also checked against what was configured (device, GID
 * index, both GIDs) and its port counters' growth against the bytes written; its record keeps both ports
 * as sysfs showed them and the counters before and after. The figure is judged against the same budget.
 */
import { rdmaReportProblems, tail, type EdgeMeasurement, type RecordVerdict } from "../../lib/fabric/edge-outcome";
import type { FabricError } from "../../lib/fabric/errors";
import { ibWriteBwMeasurement, parseIbWriteBw, type IbWriteBwReport } from "../../lib/fabric/ib-write-bw";
import { iperf3Commands, iperf3Measurement, parseIperf3Json, type Iperf3Commands, type Iperf3Result } from "../../lib/fabric/iperf3";
import { measure, measureRdma, type RdmaRun, type Run } from "../../lib/fabric/edge-measure";
import { rdmaObservations, rdmaStartingState, tcpObservations } from "../../lib/fabric/edge-record";
import { withMeasurementLock } from "../../lib/fabric/measurement-lock";
import { counterProblems } from "../../lib/fabric/rdma-edge";
import { createdEdge, recordEdge, refuseRecorded } from "./outcome";
import type { FabricEdgeInputs, FabricEdgeOutputs, RdmaTool, TcpTool } from "./schema";
import { withSessions } from "./session";

type Created = Promise<{ id: string; outs: FabricEdgeOutputs }>;

const locked = <T>(i: FabricEdgeInputs, fn: () => Promise<T>) => withMeasurementLock(process.cwd(), { edge: i.edgeId, stack: i.stack }, i.lockWaitS, fn);

/** The TCP edge's record: what it was measured against, every step, the route files, every sample. */
function recordTcp(i: FabricEdgeInputs, against: ReadonlyArray<string>, run: Run, commands: Iperf3Commands, parsed: { result: Iperf3Result; measurement: EdgeMeasurement } | null, verdict: RecordVerdict) {
  const measuredAgainst = [...against, "iperfPort", "requiredGbps", "budget", "sourceLogin", "destinationLogin"];
  return recordEdge(i, run, measuredAgainst, { iperf3OnHosts: "none", destinationPortFree: commands.settings.port }, tcpObservations(i, run, commands, parsed), verdict);
}

export async function createTcpEdge(i: FabricEdgeInputs, against: ReadonlyArray<string>): Created {
  const tool = i.tool as TcpTool;
  const commands = iperf3Commands({ serverAddress: i.destination.fabricAddress, clientAddress: i.source.fabricAddress, port: i.iperfPort, durationS: tool.durationS, streams: tool.streams });
  const run = await locked(i, () => withSessions(i, (src, dst) => measure(i, src, dst, commands)));
  let result: Iperf3Result;
  try {
    result = parseIperf3Json(run.client.stdout);
  } catch (err) {
    const reason = `the iperf3 client on ${i.source.alias} exited ${run.client.exit}: ${(err as Error).message}`;
    return refuseRecorded(i, (err as FabricError).code ?? "NARWHAL_FABRIC_TOOL_OUTPUT", reason, (v) => recordTcp(i, against, run, commands, null, v));
  }
  const m = iperf3Measurement(result);
  const measurement: EdgeMeasurement = {
    gbps: m.gbps,
    samplesGbps: [...m.samples],
    sentGbps: result.sentGbps,
    retransmits: result.retransmits,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
  };
  return createdEdge(i, run.sides, measurement, (v) => recordTcp(i, against, run, commands, { result, measurement }, v));
}

/** The RDMA edge's record: both ports, the GIDs, the commands, both sides' raw output, the counters. */
function recordRdma(i: FabricEdgeInputs, against: ReadonlyArray<string>, run: RdmaRun, parsed: { report: IbWriteBwReport; measurement: EdgeMeasurement } | null, verdict: RecordVerdict) {
  const measuredAgainst = [...against, "rdmaPort", "requiredGbps", "budget", "sourceLogin", "destinationLogin"];
  return recordEdge(i, run, measuredAgainst, rdmaStartingState(run), rdmaObservations(i, run, parsed), verdict);
}

export async function createRdmaEdge(i: FabricEdgeInputs, against: ReadonlyArray<string>): Created {
  const run = await locked(i, () => withSessions(i, (src, dst) => measureRdma(i, src, dst, i.tool as RdmaTool)));
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
    return refuseRecorded(i, "NARWHAL_FABRIC_TOOL_FAILED", reason, (v) => recordRdma(i, against, run, null, v));
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
  return createdEdge(i, run.sides, measurement, (v) => recordRdma(i, against, run, { report, measurement }, v));
}
