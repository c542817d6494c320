/**
 * One directed RDMA measurement: perftest's `ib_write_bw` between the edge's configured HCA ports, the
 * server on the destination (RDMA WRITE lands in its memory), the client on the source, with both ports'
 * counters read just before and just after. Refused, before anything starts, when a port is not ACTIVE,
 * lacks its GID index, or the two ends cannot connect (./rdma-observe.ts), or when the path is not the
 * fabric. The server is stopped whatever happened; a failed client is a result the provider records.
 */
import { FabricError } from "../../lib/fabric/errors";
import { ibWriteBwCommands, type IbWriteBwCommands } from "../../lib/fabric/ib-write-bw";
import { detachedServerStartScript, IB_WRITE_BW_CLIENT_TIMEOUT_S, ibWriteBwServerLifetimeS } from "../../lib/fabric/iperf3-remote";
import { portCountersOf, rdmaCounterEvidence, type RdmaCounterEvidence } from "../../lib/fabric/rdma-edge";
import { observe, refuseOffFabric, type Sides } from "./measure";
import { readPort } from "./rdma-observe";
import { stepsOf, withSessions, type Step } from "./session";
import { refuseBusy, serverAndClient } from "./tool-run";
import type { FabricEdgeInputs, RdmaTool } from "./types";

export interface RdmaRun {
  sides: Sides;
  commands: IbWriteBwCommands;
  client: { stdout: string; stderr: string; exit: number };
  serverLog: string;
  counters: RdmaCounterEvidence;
  startedAt: string;
  endedAt: string;
  steps: Step[];
}

function refuseUnless(i: FabricEdgeInputs, sides: Sides): void {
  const rdma = sides.rdma!;
  if (rdma.problems.length) {
    throw new FabricError(
      "NARWHAL_FABRIC_RDMA",
      `edge ${i.edgeId}: ${rdma.problems.join("; ")}. Diagnose HCA/GID; nothing was measured`,
    );
  }
  refuseOffFabric(i, sides);
}

/** Observe, refuse or measure, and read the counters around the measurement. */
export async function measureRdma(i: FabricEdgeInputs, tool: RdmaTool): Promise<RdmaRun> {
  const ends = i.rdma!;
  return withSessions(i, async (src, dst) => {
    const sides = await observe(i, src, dst);
    refuseUnless(i, sides);
    const [s, d] = [sides.rdma!.source!, sides.rdma!.destination!];
    const commands = ibWriteBwCommands({
      server: { hca: ends.destination.hca, port: ends.destination.port, gidIndex: d.gid?.index ?? null },
      client: { hca: ends.source.hca, port: ends.source.port, gidIndex: s.gid?.index ?? null },
      serverAddress: i.destination.fabricAddress,
      size: tool.size,
      iterations: tool.iterations,
      tcpPort: i.rdmaPort,
    });
    const port = commands.settings.tcpPort;
    await refuseBusy(i, src, dst, "ib_write_bw", port);

    const [sb, db] = await Promise.all([readPort(src, ends.source, true, "RDMA counters before"), readPort(dst, ends.destination, true, "RDMA counters before")]);
    const { client, serverLog, startedAt, endedAt } = await serverAndClient(i, src, dst, {
      tool: "ib_write_bw",
      port,
      serverStart: detachedServerStartScript({ tool: "ib_write_bw", argv: commands.server, port, lifetimeS: ibWriteBwServerLifetimeS() }),
      client: commands.client,
      clientLifetimeS: IB_WRITE_BW_CLIENT_TIMEOUT_S,
      diagnose: "listener, binding and HCA/GID",
    });
    const [sa, da] = await Promise.all([readPort(src, ends.source, true, "RDMA counters after"), readPort(dst, ends.destination, true, "RDMA counters after")]);
    const counters = rdmaCounterEvidence(
      { source: { host: i.source.alias, ...ends.source }, destination: { host: i.destination.alias, ...ends.destination } },
      { source: portCountersOf(sb, ends.source), destination: portCountersOf(db, ends.destination) },
      { source: portCountersOf(sa, ends.source), destination: portCountersOf(da, ends.destination) },
    );
    return {
      sides,
      commands,
      client: { stdout: client.stdout, stderr: client.stderr, exit: client.code },
      serverLog,
      counters,
      startedAt,
      endedAt,
      steps: stepsOf(src, dst),
    };
  });
}
