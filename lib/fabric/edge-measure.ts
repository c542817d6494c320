/**
 * One directed measurement on the edge's two hosts, and the cheap observation `read` repeats: both sides'
 * path observations (and, for `ucx_rdma`, their HCA ports: lib/fabric/rdma-observe.ts), the preflight,
 * the tool's server and client (lib/fabric/tool-run.ts), and the steps taken, for the evidence record.
 * TCP runs iperf3; RDMA runs perftest's `ib_write_bw` between the configured HCA ports (RDMA WRITE lands
 * in the destination's memory), with both ports' counters read just before and just after. The FabricEdge
 * provider opens the sessions and decides what to keep.
 */
import { stepsOf, type RecordedSession, type Step } from "../ssh/recorded-session";
import { refuseOffFabric, type Sides } from "./edge-outcome";
import { FabricError } from "./errors";
import { ibWriteBwCommands, type IbWriteBwCommands } from "./ib-write-bw";
import type { Iperf3Commands } from "./iperf3";
import { clientLifetimeS, detachedServerStartScript, IB_WRITE_BW_CLIENT_TIMEOUT_S, ibWriteBwServerLifetimeS, serverStartScript } from "./iperf3-remote";
import type { Transport } from "./mesh";
import { parsePathObservation, pathFingerprint, pathObservationScript, type PathEnd } from "./path";
import { portCountersOf, rdmaCounterEvidence, type RdmaCounterEvidence, type RdmaEndConfig } from "./rdma-edge";
import { observeRdma, readPort } from "./rdma-observe";
import { refuseBusy, serverAndClient, type EdgeNames } from "./tool-run";

/** One end as the measurement needs it: its alias, its fabric interface and the address on it. */
interface EdgeEnd {
  alias: string;
  fabricInterface: string;
  fabricAddress: string;
}

/** What a measurement reads of the edge's inputs. */
export interface EdgeToMeasure extends EdgeNames {
  source: EdgeEnd;
  destination: EdgeEnd;
  transport: Transport;
  rdma?: { source: RdmaEndConfig; destination: RdmaEndConfig };
  rdmaPort?: number;
}

type Session = RecordedSession;

/** Bounded, named so a timeout says which step ran out. */
const OBSERVE_TIMEOUT_S = 20;

const pathEnd = (e: EdgeEnd): PathEnd => ({ host: e.alias, interface: e.fabricInterface, address: e.fabricAddress });

/** Both hosts' sides of the path, observed at once; no traffic. */
export async function observe(i: EdgeToMeasure, src: Session, dst: Session): Promise<Sides> {
  const s = pathEnd(i.source);
  const d = pathEnd(i.destination);
  const [so, dob, rdma] = await Promise.all([
    src.script("fabric path observation", pathObservationScript(s, d.address), OBSERVE_TIMEOUT_S),
    dst.script("fabric path observation", pathObservationScript(d, s.address), OBSERVE_TIMEOUT_S),
    i.transport === "ucx_rdma" && i.rdma ? observeRdma(i, i.rdma, src, dst) : null,
  ]);
  const source = parsePathObservation(s.host, so.stdout);
  const destination = parsePathObservation(d.host, dob.stdout);
  // Both ends' ports go into both directions' fingerprints: either port changing moves the edge.
  const [sp, dp] = [rdma?.source?.fingerprint, rdma?.destination?.fingerprint];
  const ports = sp && dp ? { forward: { source: sp, destination: dp }, back: { source: dp, destination: sp } } : undefined;
  return {
    forward: pathFingerprint(i.transport, s, d, source, ports?.forward, rdma?.routes.forward ?? undefined),
    back: pathFingerprint(i.transport, d, s, destination, ports?.back, rdma?.routes.back ?? undefined),
    seen: { source, destination },
    rdma,
  };
}

/** What a measurement leaves for the record, whatever the tool. */
export interface Run {
  sides: Sides;
  client: { stdout: string; stderr: string; exit: number };
  serverLog: string;
  startedAt: string;
  endedAt: string;
  steps: Step[];
}

/** An RDMA run also has the commands it built and the port counters around it. */
export type RdmaRun = Run & { commands: IbWriteBwCommands; counters: RdmaCounterEvidence };

/** iperf3's server on the destination, its client on the source, the server stopped in every case. */
export async function measure(i: EdgeToMeasure, src: Session, dst: Session, commands: Iperf3Commands): Promise<Run> {
  const sides = await observe(i, src, dst);
  refuseOffFabric(i, sides);
  const port = commands.settings.port;
  await refuseBusy(i, src, dst, "iperf3", port);
  const { client, ...ran } = await serverAndClient(i, src, dst, {
    tool: "iperf3",
    port,
    serverStart: serverStartScript(commands),
    client: commands.client,
    clientLifetimeS: clientLifetimeS(commands.settings.durationS),
    diagnose: "listener and binding",
  });
  return { sides, client: { stdout: client.stdout, stderr: client.stderr, exit: client.code }, ...ran, steps: stepsOf(src, dst) };
}

/**
 * ib_write_bw between the edge's HCA ports, refused before anything starts when a port is not ACTIVE,
 * lacks its GID index, or the two ends cannot connect, or when the path is not the fabric.
 */
export async function measureRdma(i: EdgeToMeasure, src: Session, dst: Session, tool: { size: number; iterations: number }): Promise<RdmaRun> {
  const ends = i.rdma!;
  const sides = await observe(i, src, dst);
  const rdma = sides.rdma!;
  if (rdma.problems.length) throw new FabricError("NARWHAL_FABRIC_RDMA", `edge ${i.edgeId}: ${rdma.problems.join("; ")}. Diagnose HCA/GID; nothing was measured`);
  refuseOffFabric(i, sides);
  const commands = ibWriteBwCommands({
    server: { hca: ends.destination.hca, port: ends.destination.port, gidIndex: rdma.destination!.gid?.index ?? null },
    client: { hca: ends.source.hca, port: ends.source.port, gidIndex: rdma.source!.gid?.index ?? null },
    serverAddress: i.destination.fabricAddress,
    size: tool.size,
    iterations: tool.iterations,
    tcpPort: i.rdmaPort,
  });
  const port = commands.settings.tcpPort;
  await refuseBusy(i, src, dst, "ib_write_bw", port);

  const counters = (when: string) => Promise.all([readPort(src, ends.source, true, `RDMA counters ${when}`), readPort(dst, ends.destination, true, `RDMA counters ${when}`)]);
  const [sb, db] = await counters("before");
  const { client, ...ran } = await serverAndClient(i, src, dst, {
    tool: "ib_write_bw",
    port,
    serverStart: detachedServerStartScript({ tool: "ib_write_bw", argv: commands.server, port, lifetimeS: ibWriteBwServerLifetimeS() }),
    client: commands.client,
    clientLifetimeS: IB_WRITE_BW_CLIENT_TIMEOUT_S,
    diagnose: "listener, binding and HCA/GID",
  });
  const [sa, da] = await counters("after");
  return {
    sides,
    commands,
    client: { stdout: client.stdout, stderr: client.stderr, exit: client.code },
    ...ran,
    counters: rdmaCounterEvidence(
      { source: { host: i.source.alias, ...ends.source }, destination: { host: i.destination.alias, ...ends.destination } },
      { source: portCountersOf(sb, ends.source), destination: portCountersOf(db, ends.destination) },
      { source: portCountersOf(sa, ends.source), destination: portCountersOf(da, ends.destination) },
    ),
    steps: stepsOf(src, dst),
  };
}
