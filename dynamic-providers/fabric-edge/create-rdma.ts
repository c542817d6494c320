/**
 * `create` of a `ucx_rdma` edge: one ib_write_bw measurement under the measurement lock
 * (./measure-rdma.ts), the client's report parsed and checked against what was configured (device, GID
 * index, both GIDs), the port counters' growth checked against the bytes written, and one evidence
 * record with everything: both ports as sysfs showed them, the commands, the raw output of both sides,
 * the counters before and after. The figure is judged against the same budget as a TCP edge's.
 */
import { ibWriteBwMeasurement, parseIbWriteBw, type IbWriteBwReport } from "../../lib/fabric/ib-write-bw";
import { counterProblems } from "../../lib/fabric/rdma-edge";
import { gidDecimal } from "../../lib/discovery/rdma";
import { withMeasurementLock } from "./lock";
import { measureRdma, type RdmaRun } from "./measure-rdma";
import { createdEdge, fingerprintsOf, recordEdge, refuseRecorded } from "./outcome";
import type { EdgeMeasurement, FabricEdgeInputs, FabricEdgeOutputs, RdmaTool } from "./types";

const tail = (text: string, lines = 6) => text.trim().split("\n").slice(-lines).map((l) => l.trim()).filter(Boolean).join(" | ");

/** Where the report disagrees with the ports it was meant to run on: a figure of another path. */
function reportProblems(run: RdmaRun, r: IbWriteBwReport): string[] {
  const [s, d] = [run.sides.rdma!.source!, run.sides.rdma!.destination!];
  const out: string[] = [];
  if (r.device !== null && r.device !== s.facts.hca) out.push(`the client's report names device ${r.device}, not ${s.facts.hca}`);
  if (s.gid) {
    if (r.gidIndex !== s.gid.index) out.push(`the client's report names GID index ${r.gidIndex ?? "none"}, not ${s.gid.index}`);
    if (r.localGid !== null && r.localGid !== gidDecimal(s.gid.gid)) out.push(`the client's local GID ${r.localGid} is not ${s.host}'s GID ${s.gid.gid}`);
    if (d.gid && r.remoteGid !== null && r.remoteGid !== gidDecimal(d.gid.gid)) out.push(`the client's remote GID ${r.remoteGid} is not ${d.host}'s GID ${d.gid.gid}`);
  }
  return out;
}

async function record(
  i: FabricEdgeInputs,
  measuredAgainst: ReadonlyArray<string>,
  run: RdmaRun,
  parsed: { report: IbWriteBwReport; measurement: EdgeMeasurement } | null,
  verdict: { status: "pass" | "fail" | "invalid"; reasons: string[] },
) {
  const [s, d] = [run.sides.rdma!.source!, run.sides.rdma!.destination!];
  const expectedMtu = s.facts.activeMtu !== null && d.facts.activeMtu !== null ? Math.min(s.facts.activeMtu, d.facts.activeMtu) : null;
  const startingState = {
    ibWriteBwOnHosts: "none",
    destinationPortFree: run.commands.settings.tcpPort,
    ports: { [s.host]: `${s.facts.hca}/${s.facts.port} ${s.facts.state}`, [d.host]: `${d.facts.hca}/${d.facts.port} ${d.facts.state}` },
  };
  const against = [...measuredAgainst, "rdmaPort", "requiredGbps", "budget", "sourceLogin", "destinationLogin"];
  return recordEdge(i, run, against, startingState, {
    fingerprint: fingerprintsOf(run.sides),
    routeGet: { forward: run.sides.seen.source.route.text, return: run.sides.seen.destination.route.text },
    rdmaRoute: run.sides.rdma!.routes,
    routeFiles: { [i.source.alias]: run.sides.seen.source.routeFiles, [i.destination.alias]: run.sides.seen.destination.routeFiles },
    hca: { source: s.facts, destination: d.facts },
    gid: { source: s.gid, destination: d.gid },
    tool: { server: run.commands.server, client: run.commands.client, settings: run.commands.settings },
    report: parsed?.report ?? null,
    mtu: { reported: parsed?.report.mtu ?? null, expected: expectedMtu },
    measurement: parsed?.measurement ?? null,
    counters: run.counters,
    client: run.client,
    serverLog: run.serverLog,
    budget: { requiredGbps: i.requiredGbps, ...i.budget },
  }, verdict);
}

export async function createRdmaEdge(inputs: FabricEdgeInputs, measuredAgainst: ReadonlyArray<string>): Promise<{ id: string; outs: FabricEdgeOutputs }> {
  const tool = inputs.tool as RdmaTool;
  const run = await withMeasurementLock(process.cwd(), { edge: inputs.edgeId, stack: inputs.stack }, inputs.lockWaitS, () => measureRdma(inputs, tool));
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
    const reason = `the ib_write_bw client on ${inputs.source.alias} exited ${run.client.exit}: ${said}${server ? `; the server on ${inputs.destination.alias} said: ${server}` : ""}`;
    return refuseRecorded(inputs, "NARWHAL_FABRIC_TOOL_FAILED", reason, (v) => record(inputs, measuredAgainst, run, null, v));
  }
  const m = ibWriteBwMeasurement(report);
  const last = report.rows[report.rows.length - 1];
  const invalid = [...reportProblems(run, report), ...counterProblems(run.counters, last.bytes * last.iterations)];
  const measurement: EdgeMeasurement = {
    gbps: m.gbps,
    samplesGbps: [m.gbps],
    sentGbps: null,
    retransmits: run.counters.retransmits,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    ...(invalid.length ? { invalidReason: `the measurement did not run where it was configured to: ${invalid.join("; ")}` } : {}),
  };
  return createdEdge(inputs, run.sides, measurement, (v) => record(inputs, measuredAgainst, run, { report, measurement }, v));
}
