/**
 * One directed TCP measurement on the edge's two hosts, and the cheap observation `read` repeats (for
 * either transport): both sides' path observations (and, for `ucx_rdma`, their HCA ports: ./rdma-observe.ts),
 * the preflight, the iperf3 server and client (./tool-run.ts), and the steps taken, for the evidence record. The
 * provider (./provider.ts) decides what to keep; ./measure-rdma.ts measures RDMA edges.
 */
import { FabricError } from "../../lib/fabric/errors";
import { FABRIC_DIAGNOSIS } from "../../lib/fabric/matrix";
import type { Iperf3Commands } from "../../lib/fabric/iperf3";
import { clientLifetimeS, serverStartScript } from "../../lib/fabric/iperf3-remote";
import { parsePathObservation, pathFingerprint, pathObservationScript, type PathFingerprint, type PathObservation } from "../../lib/fabric/path";
import { observeRdma, type RdmaSides } from "./rdma-observe";
import { pathEnd, stepsOf, withSessions, type Session, type Step } from "./session";
import { refuseBusy, serverAndClient } from "./tool-run";
import type { FabricEdgeInputs, PathDigests } from "./types";

export { withSessions } from "./session";
export type { Step } from "./session";

/** Bounded, named so a timeout says which step ran out. */
export const OBSERVE_TIMEOUT_S = 20;

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

/** Refuses, before anything starts, a measurement that would not take the fabric path. */
export function refuseOffFabric(i: FabricEdgeInputs, sides: Sides): void {
  const problems = problemsOf(sides);
  if (problems.length) {
    throw new FabricError(
      "NARWHAL_FABRIC_PATH",
      `edge ${i.edgeId}: the measurement would not take the fabric path: ${problems.join("; ")}. Diagnose ${FABRIC_DIAGNOSIS.slice(0, 2).join(" and ")}; nothing was measured`,
    );
  }
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

/** Server on the destination, client on the source, server stopped in every case (./tool-run.ts). */
export async function measure(i: FabricEdgeInputs, commands: Iperf3Commands): Promise<Run> {
  return withSessions(i, async (src, dst) => {
    const sides = await observe(i, src, dst);
    refuseOffFabric(i, sides);
    const port = commands.settings.port;
    await refuseBusy(i, src, dst, "iperf3", port);
    const { client, serverLog, startedAt, endedAt } = await serverAndClient(i, src, dst, {
      tool: "iperf3",
      port,
      serverStart: serverStartScript(commands),
      client: commands.client,
      clientLifetimeS: clientLifetimeS(commands.settings.durationS),
      diagnose: "listener and binding",
    });
    const steps = stepsOf(src, dst);
    return { sides, clientText: client.stdout, clientExit: client.code, serverLog, startedAt, endedAt, steps };
  });
}
