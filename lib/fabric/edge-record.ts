/** What a FabricEdge's evidence record observes, per transport: everything the measurement saw, shaped for the record. */
import type { RdmaRun, Run } from "./edge-measure";
import { fingerprintsOf, type EdgeMeasurement } from "./edge-outcome";
import type { IbWriteBwReport } from "./ib-write-bw";
import type { Iperf3Commands, Iperf3Result } from "./iperf3";

/** What the record names of the edge besides the run. */
export interface EdgeOfRecord {
  source: { alias: string };
  destination: { alias: string };
  requiredGbps: number;
  budget: { governingEngine: string; budgetKey: string; formula: string };
}

/** What both transports' records observe of the path. */
function common(run: Run) {
  return {
    fingerprint: fingerprintsOf(run.sides),
    routeGet: { forward: run.sides.seen.source.route.text, return: run.sides.seen.destination.route.text },
  };
}

const routeFiles = (i: EdgeOfRecord, run: Run) => ({ [i.source.alias]: run.sides.seen.source.routeFiles, [i.destination.alias]: run.sides.seen.destination.routeFiles });

/** A TCP edge's: the route files, iperf3's commands and version, every sample, its CPU figures and whole report. */
export function tcpObservations(i: EdgeOfRecord, run: Run, commands: Iperf3Commands, parsed: { result: Iperf3Result; measurement: EdgeMeasurement } | null) {
  const r = parsed?.result;
  const text = run.client.stdout;
  return {
    ...common(run),
    routeFiles: routeFiles(i, run),
    tool: { server: commands.server, client: commands.client, version: r?.version ?? null, protocol: r?.protocol ?? null, streams: r?.streams ?? null },
    measurement: parsed?.measurement ?? null,
    intervals: r?.intervals ?? null,
    cpu: r?.cpu ?? null,
    client: r ? (JSON.parse(text.slice(text.indexOf("{"), text.lastIndexOf("}") + 1)) as unknown) : text,
    serverLog: run.serverLog,
    budget: { requiredGbps: i.requiredGbps, ...i.budget },
  };
}

/** An RDMA edge's starting state: no ib_write_bw on the hosts, its port free, both HCA ports' state. */
export function rdmaStartingState(run: RdmaRun) {
  const [s, d] = [run.sides.rdma!.source!, run.sides.rdma!.destination!];
  return {
    ibWriteBwOnHosts: "none",
    destinationPortFree: run.commands.settings.tcpPort,
    ports: { [s.host]: `${s.facts.hca}/${s.facts.port} ${s.facts.state}`, [d.host]: `${d.facts.hca}/${d.facts.port} ${d.facts.state}` },
  };
}

/** An RDMA edge's: both ports as sysfs showed them, the GIDs, the commands, both sides' raw output, the counters. */
export function rdmaObservations(i: EdgeOfRecord, run: RdmaRun, parsed: { report: IbWriteBwReport; measurement: EdgeMeasurement } | null) {
  const [s, d] = [run.sides.rdma!.source!, run.sides.rdma!.destination!];
  const expectedMtu = s.facts.activeMtu !== null && d.facts.activeMtu !== null ? Math.min(s.facts.activeMtu, d.facts.activeMtu) : null;
  return {
    ...common(run),
    rdmaRoute: run.sides.rdma!.routes,
    routeFiles: routeFiles(i, run),
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
  };
}
