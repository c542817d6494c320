/**
 * What a TCP (iperf3) and an RDMA (ib_write_bw) measurement do alike once the path is judged: the
 * preflight on both hosts, the tool's server started detached on the destination, the client run on the
 * source, and the server stopped whatever happened, its log kept. The FabricEdge provider says
 * which tool, with which argv; an RDMA edge reads its port counters between the preflight and the server.
 */
import type { ExecResult } from "../ssh/client";
import type { RecordedSession as Session } from "../ssh/recorded-session";
import { shellLine } from "../shell";
import { FabricError } from "./errors";
import {
  boundedArgv,
  KILL_GRACE_S,
  type FabricTool,
  preflightRefusal,
  type PreflightRefusal,
  preflightScript,
  runDirOf,
  SERVER_LOG_MARK,
  SERVER_READY_TIMEOUT_S,
  serverStopScript,
} from "./iperf3-remote";

/** What a measurement's messages name: the edge and its two hosts. */
export interface EdgeNames {
  edgeId: string;
  source: { alias: string };
  destination: { alias: string };
}

/** Bounded steps, named so a timeout says which one ran out. */
export const PREFLIGHT_TIMEOUT_S = 20;
export const SERVER_START_TIMEOUT_S = SERVER_READY_TIMEOUT_S + 10;
export const SERVER_STOP_TIMEOUT_S = KILL_GRACE_S + 15;

export function busyMessage(i: EdgeNames, host: string, r: ExecResult, tool: FabricTool = "iperf3"): string {
  return `edge ${i.edgeId}: host ${host}: ${refusal(r, tool).message}`;
}

function refusal(r: ExecResult, tool: FabricTool): PreflightRefusal {
  return preflightRefusal(tool, r, tool === "iperf3" ? "fabric.iperfPort" : "fabric.rdmaPort");
}

/** Refuses, before anything starts, a host without the tool (or unable to run it), one already running it, or a taken port. */
export async function refuseBusy(i: EdgeNames, src: Session, dst: Session, tool: FabricTool, port: number): Promise<void> {
  const [pre, pred] = await Promise.all([
    src.script("fabric preflight", preflightScript(null, tool), PREFLIGHT_TIMEOUT_S),
    dst.script("fabric preflight", preflightScript(port, tool), PREFLIGHT_TIMEOUT_S),
  ]);
  if (pre.code !== 0) throw new FabricError(refusal(pre, tool).code, busyMessage(i, i.source.alias, pre, tool));
  if (pred.code !== 0) throw new FabricError(refusal(pred, tool).code, busyMessage(i, i.destination.alias, pred, tool));
}

/** One tool's server and client, as the measurement that uses them says. */
export interface ToolRun {
  tool: FabricTool;
  port: number;
  /** The script that starts the server detached and prints its run folder first. */
  serverStart: string;
  /** The client's argv on the source, before `timeout` bounds it. */
  client: ReadonlyArray<string>;
  clientLifetimeS: number;
  /** What to diagnose when the server does not start. */
  diagnose: string;
}

export interface ToolResult {
  client: ExecResult;
  serverLog: string;
  startedAt: string;
  endedAt: string;
}

/** Server on the destination, client on the source, server stopped in every case. */
export async function serverAndClient(i: EdgeNames, src: Session, dst: Session, t: ToolRun): Promise<ToolResult> {
  const start = await dst.script(`${t.tool} server start`, t.serverStart, SERVER_START_TIMEOUT_S);
  // The folder is printed before anything can fail, so a server that started is always stopped.
  const dir = start.stdout.startsWith("/tmp/narwhal-fabric.") ? runDirOf(i.destination.alias, start.stdout, t.tool) : null;
  let client: ExecResult | undefined;
  let failure: Error | undefined;
  let startedAt = "";
  let endedAt = "";
  try {
    if (start.code !== 0) {
      throw new FabricError(
        "NARWHAL_FABRIC_TOOL_FAILED",
        `edge ${i.edgeId}: host ${i.destination.alias}: ${start.stderr.trim() || `the ${t.tool} server start exited ${start.code}`}; diagnose ${t.diagnose}`,
      );
    }
    const argv = boundedArgv(t.client, t.clientLifetimeS);
    startedAt = new Date().toISOString();
    client = await src.command(`${t.tool} client`, shellLine(argv), argv, t.clientLifetimeS + KILL_GRACE_S + 5);
    endedAt = new Date().toISOString();
  } catch (err) {
    failure = err as Error;
  }
  let serverLog = "";
  if (dir) {
    const stop = await dst.script(`${t.tool} server stop`, serverStopScript(dir, t.port, t.tool), SERVER_STOP_TIMEOUT_S);
    serverLog = stop.stdout.slice(stop.stdout.indexOf(SERVER_LOG_MARK) + SERVER_LOG_MARK.length).trim();
    if (stop.code !== 0) {
      const left = `edge ${i.edgeId}: host ${i.destination.alias}: ${stop.stderr.trim() || `stopping the ${t.tool} server exited ${stop.code}`}`;
      throw new FabricError("NARWHAL_FABRIC_BUSY", failure ? `${failure.message}; and ${left}` : left);
    }
  }
  if (failure) throw failure;
  return { client: client!, serverLog, startedAt, endedAt };
}
