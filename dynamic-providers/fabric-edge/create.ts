/**
 * `create` of either transport, under the measurement lock (lib/fabric/measurement-lock.ts): one measurement
 * (lib/fabric/edge-measure.ts), its figure (lib/fabric/edge-figure.ts), and one evidence record with everything
 * it was measured against and saw. A `ucx_rdma` edge's record keeps both ports as sysfs showed them and the
 * counters before and after. Either record keeps the reservation its hosts' engines proved around the
 * measurement (./reservation.ts), which the outputs summarise. The figure is judged against the same budget.
 */
import { rdmaFigure, tcpFigure, type Figure } from "../../lib/fabric/edge-figure";
import { measure, measureRdma, type Run } from "../../lib/fabric/edge-measure";
import { digestsOf, fingerprintsOf, recordVerdict, verdictFields, type RecordVerdict } from "../../lib/fabric/edge-outcome";
import { rdmaObservations, rdmaStartingState, tcpObservations } from "../../lib/fabric/edge-record";
import { FabricError } from "../../lib/fabric/errors";
import { iperf3Commands } from "../../lib/fabric/iperf3";
import { FABRIC_DIAGNOSIS } from "../../lib/fabric/matrix";
import { withMeasurementLock } from "../../lib/fabric/measurement-lock";
import { reservationSummary, type EdgeReservation } from "../../lib/fabric/edge-reservation";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import type { FabricEdgeInputs, FabricEdgeOutputs, RdmaTool, TcpTool } from "./schema";
import { withReservation } from "./reservation";
import { withSessions } from "./session";

type Created = Promise<{ id: string; outs: FabricEdgeOutputs }>;

const locked = <T>(i: FabricEdgeInputs, fn: () => Promise<T>) => withMeasurementLock(process.cwd(), { edge: i.edgeId, stack: i.stack }, i.lockWaitS, fn);

/**
 * The edge's evidence record, for either transport, then its outputs. The record names the inputs it was
 * measured against by key only (the inputs also carry the credentials and the engine's serialised
 * provider), with both directions' path digests, every step, and what the transport observed. A run
 * without a figure is kept as an invalid record first (the runbook records a blocked gate before anything
 * changes it), then refused with the record's path.
 */
async function settled(i: FabricEdgeInputs, run: Run, reservation: EdgeReservation, figure: Figure<unknown>, against: string[], startingState: object, observations: object): Created {
  const record = (verdict: RecordVerdict) =>
    providerEvidence(i.stack, [i.sourcePrivateKey, i.sourcePassword, i.destinationPrivateKey, i.destinationPassword]).record({
      kind: "fabric-edge",
      subject: { kind: "edge", alias: i.edgeId },
      inputs: { ...Object.fromEntries(against.map((k) => [k, i[k as keyof FabricEdgeInputs] ?? null])), fingerprint: digestsOf(run.sides) } as never,
      startingState: startingState as never,
      commands: run.steps,
      startedAt: run.steps[0]?.startedAt ?? run.startedAt,
      endedAt: new Date().toISOString(),
      observations: { ...observations, reservation } as never,
      verdict,
      artifacts: [],
    });
  if ("reason" in figure) {
    const evidence = await record({ status: "invalid", reasons: [figure.reason] });
    throw new FabricError(figure.code, `edge ${i.edgeId}: ${figure.reason}. Diagnose ${FABRIC_DIAGNOSIS.join(", ")}; the attempt is recorded in ${evidence.relativePath}`);
  }
  const { measurement } = figure.parsed;
  const verdict = verdictFields(measurement, i.requiredGbps);
  const evidence = await record(recordVerdict(verdict));
  const digests = digestsOf(run.sides);
  const outs: FabricEdgeOutputs = { ...i, measurement, fingerprint: fingerprintsOf(run.sides), measured: digests, observed: digests, observedProblems: [], ...verdict, evidence, reservation: reservationSummary(reservation) };
  return { id: `${i.source.alias}-to-${i.destination.alias}-${evidence.digest.slice(7, 19)}`, outs };
}

/** The TCP edge: its record keeps what it was measured against, every step, the route files, every sample. */
export async function createTcpEdge(i: FabricEdgeInputs, against: ReadonlyArray<string>): Created {
  const tool = i.tool as TcpTool;
  const commands = iperf3Commands({ serverAddress: i.destination.fabricAddress, clientAddress: i.source.fabricAddress, port: i.iperfPort, durationS: tool.durationS, streams: tool.streams });
  const { run, reservation } = await locked(i, () => withSessions(i, (src, dst) => withReservation(i.engines, src, dst, () => measure(i, src, dst, commands))));
  const figure = tcpFigure(i, run);
  const observations = tcpObservations(i, run, commands, "parsed" in figure ? figure.parsed : null);
  return settled(i, run, reservation, figure, [...against, "iperfPort", "requiredGbps", "budget", "sourceLogin", "destinationLogin"], { iperf3OnHosts: "none", destinationPortFree: commands.settings.port }, observations);
}

/** The RDMA edge: its record keeps both ports, the GIDs, the commands, both sides' raw output, the counters. */
export async function createRdmaEdge(i: FabricEdgeInputs, against: ReadonlyArray<string>): Created {
  const { run, reservation } = await locked(i, () => withSessions(i, (src, dst) => withReservation(i.engines, src, dst, () => measureRdma(i, src, dst, i.tool as RdmaTool))));
  const figure = rdmaFigure(i, run);
  const observations = rdmaObservations(i, run, "parsed" in figure ? figure.parsed : null);
  return settled(i, run, reservation, figure, [...against, "rdmaPort", "requiredGbps", "budget", "sourceLogin", "destinationLogin"], rdmaStartingState(run), observations);
}
