/**
 * An RDMA edge's ends as sysfs shows them, without traffic: each host's HCA port (state, link layer,
 * rate, GID table, netdev, MTU), the GID each end uses, and then, for routed RoCE GIDs, the route between
 * the two GIDs' addresses on each side. Used by `create` before anything is measured and by `read`, so a
 * port going down, a GID moving or a new route replaces exactly the edges that use it.
 */
import { parseRdmaSysfs, rdmaSysfsScript, type RdmaInventory } from "../discovery/rdma";
import { splitSections } from "../discovery/probe-script";
import type { RecordedSession as Session } from "../ssh/recorded-session";
import { observeRdmaEnd, parseRdmaRoute, rdmaPairProblems, rdmaRouteScript, type ObservedRdmaEnd, type RdmaEndConfig } from "./rdma-edge";
import type { EdgeNames } from "./tool-run";

const OBSERVE_TIMEOUT_S = 20;

export interface RdmaSides {
  /** Null when the HCA or port is not there (then `problems` says so). */
  readonly source: ObservedRdmaEnd | null;
  readonly destination: ObservedRdmaEnd | null;
  /** The GID-to-GID route on each side (RoCE with routed GIDs), as `ip route get` printed it. */
  readonly routes: { readonly forward: { text: string; exitStatus: number } | null; readonly back: { text: string; exitStatus: number } | null };
  /** What stops the ends carrying RDMA traffic, each naming host, HCA and port; empty when they can. */
  readonly problems: string[];
}

/** One host's HCA port, read with lib/discovery/rdma.ts's script; `counters` for the before and after reads. */
export async function readPort(session: Session, end: RdmaEndConfig, counters: boolean, name: string): Promise<RdmaInventory> {
  const r = await session.script(name, rdmaSysfsScript({ hca: end.hca, port: end.port, counters }), OBSERVE_TIMEOUT_S);
  const s = splitSections(r.stdout);
  return parseRdmaSysfs(s.rdma ?? "", s.rdma_devinfo);
}

export async function observeRdma(i: EdgeNames, ends: { source: RdmaEndConfig; destination: RdmaEndConfig }, src: Session, dst: Session): Promise<RdmaSides> {
  const [si, di] = await Promise.all([readPort(src, ends.source, false, "RDMA port observation"), readPort(dst, ends.destination, false, "RDMA port observation")]);
  const source = observeRdmaEnd(i.source.alias, ends.source, si);
  const destination = observeRdmaEnd(i.destination.alias, ends.destination, di);
  const problems = [...source.problems, ...destination.problems];
  if (source.end && destination.end && problems.length === 0) problems.push(...rdmaPairProblems(source.end, destination.end));

  const [s, d] = [source.end, destination.end];
  const forwardScript = s && d ? rdmaRouteScript(s.gid, d.gid) : null;
  const backScript = s && d ? rdmaRouteScript(d.gid, s.gid) : null;
  const [forward, back] = await Promise.all([
    forwardScript ? src.script("RDMA route observation", forwardScript, OBSERVE_TIMEOUT_S).then((r) => parseRdmaRoute(i.source.alias, r.stdout)) : null,
    backScript ? dst.script("RDMA route observation", backScript, OBSERVE_TIMEOUT_S).then((r) => parseRdmaRoute(i.destination.alias, r.stdout)) : null,
  ]);
  return { source: s, destination: d, routes: { forward, back }, problems };
}
