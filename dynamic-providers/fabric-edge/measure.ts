/**
 * One directed TCP measurement on the edge's two hosts, and the cheap observation `read` repeats (for
 * either transport): both sides' path observations (and, for `ucx_rdma`, their HCA ports: ./rdma-observe.ts),
 * the preflight, the iperf3 server and client, and the steps taken, for the evidence record. The
 * provider (./provider.ts) decides what to keep; ./measure-rdma.ts measures RDMA edges.
 */
import type { ExecResult } from "../../lib/ssh/client";
import { shellLine } from "../../lib/shell";
import { FabricError } from "../../lib/fabric/errors";
import { FABRIC_DIAGNOSIS } from "../../lib/fabric/matrix";
import type { Iperf3Commands } from "../../lib/fabric/iperf3";
import {
  BUSY_IPERF3,
  BUSY_PORT,
  clientArgv,
  clientLifetimeS,
  KILL_GRACE_S,
  NO_IPERF3,
  type FabricTool,
  preflightScript,
  runDirOf,
  SERVER_LOG_MARK,
  SERVER_READY_TIMEOUT_S,
  serverStartScript,
  serverStopScript,
} from "../../lib/fabric/iperf3-remote";
import { parsePathObservation, pathFingerprint, pathObservationScript, type PathFingerprint, type PathObservation } from "../../lib/fabric/path";
import { observeRdma, type RdmaSides } from "./rdma-observe";
import { pathEnd, stepsOf, withSessions, type Session, type Step } from "./session";
import type { FabricEdgeInputs, PathDigests } from "./types";

export { withSessions } from "./session";
export type { Step } from "./session";

/** Bounded steps, named so a timeout says which one ran out. */
export const OBSERVE_TIMEOUT_S = 20;
export const PREFLIGHT_TIMEOUT_S = 20;
export const SERVER_START_TIMEOUT_S = SERVER_READY_TIMEOUT_S + 10;
export const SERVER_STOP_TIMEOUT_S = KILL_GRACE_S + 15;

export interface Sides {
  forward: PathFingerprint;
  back: PathFingerprint;
  seen: { source: PathObservation; destination: PathObservation };
  /** `ucx_rdma` only: both HCA ports, the GID-to-GID routes, and what stops them carrying the traffic. */
  rdma: RdmaSides | null;
}

/** Both hosts' sides of the path, observed at once; no traffic. */
export async function observe(i: FabricEdgeInputs, src: Session, dst: Session): Promise<Sides> {
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

export function digestsOf(sides: Sides): PathDigests {
  return { forwardPath: sides.forward.digest, returnPath: sides.back.digest };
}

export function problemsOf(sides: Sides): string[] {
  const side = (f: PathFingerprint, which: string) => (f.ok ? f.problems.map((p) => `${which}: ${p}`) : [f.reason]);
  return [...side(sides.forward, "forward path"), ...side(sides.back, "return path")];
}

export function busyMessage(i: FabricEdgeInputs, host: string, r: ExecResult, tool: FabricTool = "iperf3"): string {
  const what = r.stdout.trim() || r.stderr.trim();
  const install = tool === "iperf3" ? "iperf3" : "perftest (ib_write_bw)";
  const portKey = tool === "iperf3" ? "fabric.iperfPort" : "fabric.rdmaPort";
  if (r.code === NO_IPERF3) return `edge ${i.edgeId}: host ${host}: ${what}; install ${install} on every engine host`;
  if (r.code === BUSY_IPERF3) return `edge ${i.edgeId}: host ${host}: ${what}; another measurement or test traffic is running there, and the mesh is measured one edge at a time while idle`;
  if (r.code === BUSY_PORT) return `edge ${i.edgeId}: host ${host}: ${what}; choose another ${portKey} or stop that listener`;
  return `edge ${i.edgeId}: host ${host}: the fabric preflight exited ${r.code}: ${what}`;
}

export interface Run {
  sides: Sides;
  clientText: string;
  clientExit: number;
  serverLog: string;
  startedAt: string;
  endedAt: string;
  steps: Step[];
}

/** Server on the destination, client on the source, server stopped in every case. */
export async function measure(i: FabricEdgeInputs, commands: Iperf3Commands): Promise<Run> {
  return withSessions(i, async (src, dst) => {
    const sides = await observe(i, src, dst);
    const problems = problemsOf(sides);
    if (problems.length) {
      throw new FabricError(
        "NARWHAL_FABRIC_PATH",
        `edge ${i.edgeId}: the measurement would not take the fabric path: ${problems.join("; ")}. Diagnose ${FABRIC_DIAGNOSIS.slice(0, 2).join(" and ")}; nothing was measured`,
      );
    }
    const [pre, pred] = await Promise.all([
      src.script("fabric preflight", preflightScript(null), PREFLIGHT_TIMEOUT_S),
      dst.script("fabric preflight", preflightScript(commands.settings.port), PREFLIGHT_TIMEOUT_S),
    ]);
    if (pre.code !== 0) throw new FabricError("NARWHAL_FABRIC_BUSY", busyMessage(i, i.source.alias, pre));
    if (pred.code !== 0) throw new FabricError("NARWHAL_FABRIC_BUSY", busyMessage(i, i.destination.alias, pred));

    const start = await dst.script("iperf3 server start", serverStartScript(commands), SERVER_START_TIMEOUT_S);
    // The folder is printed before anything can fail, so a server that started is always stopped.
    const dir = start.stdout.startsWith("/tmp/narwhal-fabric.") ? runDirOf(i.destination.alias, start.stdout) : null;
    let client: ExecResult | undefined;
    let failure: Error | undefined;
    let startedAt = "";
    let endedAt = "";
    try {
      if (start.code !== 0) {
        throw new FabricError(
          "NARWHAL_FABRIC_TOOL_FAILED",
          `edge ${i.edgeId}: host ${i.destination.alias}: ${start.stderr.trim() || `the iperf3 server start exited ${start.code}`}; diagnose listener and binding`,
        );
      }
      const argv = clientArgv(commands);
      startedAt = new Date().toISOString();
      client = await src.command("iperf3 client", shellLine(argv), argv, clientLifetimeS(commands.settings.durationS) + KILL_GRACE_S + 5);
      endedAt = new Date().toISOString();
    } catch (err) {
      failure = err as Error;
    }
    let serverLog = "";
    if (dir) {
      const stop = await dst.script("iperf3 server stop", serverStopScript(dir, commands.settings.port), SERVER_STOP_TIMEOUT_S);
      serverLog = stop.stdout.slice(stop.stdout.indexOf(SERVER_LOG_MARK) + SERVER_LOG_MARK.length).trim();
      if (stop.code !== 0) {
        const left = `edge ${i.edgeId}: host ${i.destination.alias}: ${stop.stderr.trim() || `stopping the iperf3 server exited ${stop.code}`}`;
        throw new FabricError("NARWHAL_FABRIC_BUSY", failure ? `${failure.message}; and ${left}` : left);
      }
    }
    if (failure) throw failure;
    const steps = stepsOf(src, dst);
    return { sides, clientText: client!.stdout, clientExit: client!.code, serverLog, startedAt, endedAt, steps };
  });
}

