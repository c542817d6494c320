/**
 * One directed RDMA measurement: perftest's `ib_write_bw` between the edge's configured HCA ports, the
 * server on the destination (RDMA WRITE lands in its memory), the client on the source, with both ports'
 * counters read just before and just after. Refused, before anything starts, when a port is not ACTIVE,
 * lacks its GID index, or the two ends cannot connect (./rdma-observe.ts), or when the path is not the
 * fabric. The server is stopped whatever happened; a failed client is a result the provider records.
 */
import type { ExecResult } from "../../lib/ssh/client";
import { shellLine } from "../../lib/shell";
import { FabricError } from "../../lib/fabric/errors";
import { FABRIC_DIAGNOSIS } from "../../lib/fabric/matrix";
import { ibWriteBwCommands, type IbWriteBwCommands } from "../../lib/fabric/ib-write-bw";
import {
  detachedServerStartScript,
  IB_WRITE_BW_CLIENT_TIMEOUT_S,
  ibWriteBwServerLifetimeS,
  KILL_GRACE_S,
  preflightScript,
  runDirOf,
  SERVER_LOG_MARK,
  serverStopScript,
} from "../../lib/fabric/iperf3-remote";
import { portCountersOf, rdmaCounterEvidence, type RdmaCounterEvidence } from "../../lib/fabric/rdma-edge";
import { busyMessage, observe, PREFLIGHT_TIMEOUT_S, problemsOf, SERVER_START_TIMEOUT_S, SERVER_STOP_TIMEOUT_S, type Sides } from "./measure";
import { readPort } from "./rdma-observe";
import { stepsOf, withSessions, type Step } from "./session";
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
  const problems = problemsOf(sides);
  if (problems.length) {
    throw new FabricError(
      "NARWHAL_FABRIC_PATH",
      `edge ${i.edgeId}: the measurement would not take the fabric path: ${problems.join("; ")}. Diagnose ${FABRIC_DIAGNOSIS.slice(0, 2).join(" and ")}; nothing was measured`,
    );
  }
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
    const [pre, pred] = await Promise.all([
      src.script("fabric preflight", preflightScript(null, "ib_write_bw"), PREFLIGHT_TIMEOUT_S),
      dst.script("fabric preflight", preflightScript(port, "ib_write_bw"), PREFLIGHT_TIMEOUT_S),
    ]);
    if (pre.code !== 0) throw new FabricError("NARWHAL_FABRIC_BUSY", busyMessage(i, i.source.alias, pre, "ib_write_bw"));
    if (pred.code !== 0) throw new FabricError("NARWHAL_FABRIC_BUSY", busyMessage(i, i.destination.alias, pred, "ib_write_bw"));

    const [sb, db] = await Promise.all([readPort(src, ends.source, true, "RDMA counters before"), readPort(dst, ends.destination, true, "RDMA counters before")]);
    const start = await dst.script(
      "ib_write_bw server start",
      detachedServerStartScript({ tool: "ib_write_bw", argv: commands.server, port, lifetimeS: ibWriteBwServerLifetimeS() }),
      SERVER_START_TIMEOUT_S,
    );
    // The folder is printed before anything can fail, so a server that started is always stopped.
    const dir = start.stdout.startsWith("/tmp/narwhal-fabric.") ? runDirOf(i.destination.alias, start.stdout, "ib_write_bw") : null;
    let client: ExecResult | undefined;
    let failure: Error | undefined;
    let startedAt = "";
    let endedAt = "";
    try {
      if (start.code !== 0) {
        throw new FabricError(
          "NARWHAL_FABRIC_TOOL_FAILED",
          `edge ${i.edgeId}: host ${i.destination.alias}: ${start.stderr.trim() || `the ib_write_bw server start exited ${start.code}`}; diagnose listener, binding and HCA/GID`,
        );
      }
      const argv = ["timeout", "-k", String(KILL_GRACE_S), String(IB_WRITE_BW_CLIENT_TIMEOUT_S), ...commands.client];
      startedAt = new Date().toISOString();
      client = await src.command("ib_write_bw client", shellLine(argv), argv, IB_WRITE_BW_CLIENT_TIMEOUT_S + KILL_GRACE_S + 5);
      endedAt = new Date().toISOString();
    } catch (err) {
      failure = err as Error;
    }
    let serverLog = "";
    if (dir) {
      const stop = await dst.script("ib_write_bw server stop", serverStopScript(dir, port, "ib_write_bw"), SERVER_STOP_TIMEOUT_S);
      serverLog = stop.stdout.slice(stop.stdout.indexOf(SERVER_LOG_MARK) + SERVER_LOG_MARK.length).trim();
      if (stop.code !== 0) {
        const left = `edge ${i.edgeId}: host ${i.destination.alias}: ${stop.stderr.trim() || `stopping the ib_write_bw server exited ${stop.code}`}`;
        throw new FabricError("NARWHAL_FABRIC_BUSY", failure ? `${failure.message}; and ${left}` : left);
      }
    }
    if (failure) throw failure;
    const [sa, da] = await Promise.all([readPort(src, ends.source, true, "RDMA counters after"), readPort(dst, ends.destination, true, "RDMA counters after")]);
    const counters = rdmaCounterEvidence(
      { source: { host: i.source.alias, ...ends.source }, destination: { host: i.destination.alias, ...ends.destination } },
      { source: portCountersOf(sb, ends.source), destination: portCountersOf(db, ends.destination) },
      { source: portCountersOf(sa, ends.source), destination: portCountersOf(da, ends.destination) },
    );
    return {
      sides,
      commands,
      client: { stdout: client!.stdout, stderr: client!.stderr, exit: client!.code },
      serverLog,
      counters,
      startedAt,
      endedAt,
      steps: stepsOf(src, dst),
    };
  });
}
