/**
 * What a directed edge's measurement was taken against: its link fingerprint. A fabric edge's evidence
 * takes the fingerprint's digest as input, so a change of route, address, interface, MTU, transport or
 * RDMA port replaces exactly that edge's measurement (design, sections 3 and 4).
 *
 * The route is kept as the fields `ip route get <destination> from <source>` resolves (type, destination,
 * gateway, device, source, table, the route's own MTU), not as its text: the text also carries the
 * caller's uid and the route-cache state (`cache expires 297sec mtu 1450`, a learned path-MTU exception),
 * which change between runs without the path changing.
 */
import { sha256Json } from "../digest";
import { FabricError } from "./errors";

/** The stable fields of one `ip route get` answer. */
export interface RouteGet {
  /** unicast, local, broadcast, … (`ip` omits "unicast"). */
  readonly type: string;
  readonly destination: string;
  /** `via`: the next hop, null when the destination is on-link. */
  readonly gateway: string | null;
  /** `dev`: the interface the packets leave on. */
  readonly device: string | null;
  /** `src`: the source address the kernel picks, null when `from` fixed it. */
  readonly source: string | null;
  /** `from`, when the query named a source. */
  readonly from: string | null;
  readonly table: string | null;
  /**
   * The route's `mtu` metric (`ip route add … mtu 1400`), null when the route sets none. `ip` prints it
   * inline or on the cache line; a cache line with `expires` is a learned exception, not the route's.
   */
  readonly mtu: number | null;
}

const ROUTE_TYPES = new Set(["unicast", "local", "broadcast", "multicast", "anycast", "unreachable", "prohibit", "blackhole", "throw", "nat"]);
/** Keys whose value changes between runs or says nothing about the path. */
const VOLATILE = new Set(["uid", "cache", "expires", "error", "users", "age", "used", "mark", "ipid", "metric", "pref", "proto", "scope", "hoplimit", "rtt", "rttvar", "cwnd"]);
/** Single-word flags `ip` may print. */
const FLAGS = new Set(["onlink", "pervasive", "linkdown", "rt_offload", "rt_trap", "notify"]);

/**
 * Parses `ip route get` text (IPv4 or IPv6; the `cache …` continuation and per-user fields are dropped).
 * Throws `NARWHAL_FABRIC_FINGERPRINT` on text that is not a route.
 */
export function parseRouteGet(text: string): RouteGet {
  // Everything from "cache" on is route-cache state.
  const tokens = text.trim().split(/\s+/).filter(Boolean);
  const cut = tokens.indexOf("cache");
  const t = cut >= 0 ? tokens.slice(0, cut) : tokens;
  let i = 0;
  let type = "unicast";
  if (t[i] && ROUTE_TYPES.has(t[i])) type = t[i++]!;
  const destination = t[i++];
  if (!destination || !/^[0-9A-Fa-f:.]+(?:\/\d+)?$/.test(destination)) {
    throw new FabricError("NARWHAL_FABRIC_FINGERPRINT", `not an \`ip route get\` answer: ${JSON.stringify(text.trim().slice(0, 200))}`);
  }
  const fields: Record<string, string> = {};
  while (i < t.length) {
    const key = t[i++];
    if (FLAGS.has(key)) continue;
    if (key === "mtu" && t[i] === "lock") i++;
    const value = t[i++];
    if (value === undefined) break;
    if (!VOLATILE.has(key)) fields[key] = value;
  }
  return {
    type,
    destination,
    gateway: fields.via ?? null,
    device: fields.dev ?? null,
    source: fields.src ?? null,
    from: fields.from ?? null,
    table: fields.table ?? null,
    mtu: routeMtu(fields.mtu, cut >= 0 ? tokens.slice(cut + 1) : []),
  };
}

function routeMtu(inline: string | undefined, cache: string[]): number | null {
  const at = cache.indexOf("mtu");
  const fromCache = at >= 0 && !cache.includes("expires") ? cache[cache[at + 1] === "lock" ? at + 2 : at + 1] : undefined;
  const value = inline ?? fromCache;
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : null;
}

/** One end's RDMA port, as `ibv_devinfo` / `show_gids` name it, and what sysfs shows of it. */
export interface RdmaPort {
  /** HCA name, e.g. mlx5_0. */
  readonly hca: string;
  /** HCA port number (1-based). */
  readonly port: number;
  /** GID table index (RoCE v2 is usually 3 on mlx5); null on InfiniBand when none is configured (no GRH). */
  readonly gidIndex: number | null;
  /** The GID at that index, e.g. 0000:0000:0000:0000:0000:ffff:0a00:010b; null with `gidIndex`. */
  readonly gid: string | null;
  /** `gid_attrs/types/<i>` ("RoCE v2"), `gid_attrs/ndevs/<i>`, `link_layer`, `state`, `rate` and the active MTU, when observed. */
  readonly gidType?: string | null;
  readonly netdev?: string | null;
  readonly linkLayer?: string | null;
  readonly state?: string | null;
  readonly rate?: string | null;
  readonly activeMtu?: number | null;
}

export interface LinkFingerprintInputs {
  readonly transport: "tcp" | "ucx_rdma";
  readonly source: { readonly host: string; readonly interface: string; readonly address: string };
  readonly destination: { readonly host: string; readonly address: string };
  /** MTU of the source interface. */
  readonly mtu: number;
  /** `ip route get <destination.address> from <source.address>` on the source host: its text, or parsed. */
  readonly route: string | RouteGet;
  /** Both ends' RDMA ports; required for ucx_rdma, ignored for tcp. */
  readonly rdma?: { readonly source: RdmaPort; readonly destination: RdmaPort };
  /**
   * RoCE: `ip route get <destination GID's address> from <source GID's address>` on the source, the path
   * the RDMA traffic itself is routed on (it must leave by the netdev that owns the source GID). Ignored for tcp.
   */
  readonly rdmaRoute?: string | RouteGet;
}

/** The normalized fingerprint: every field is something that, changed, invalidates the measurement. */
export interface LinkFingerprint {
  readonly transport: "tcp" | "ucx_rdma";
  readonly source: { readonly host: string; readonly interface: string; readonly address: string };
  readonly destination: { readonly host: string; readonly address: string };
  readonly mtu: number;
  readonly route: RouteGet;
  readonly rdma: { readonly source: RdmaPort; readonly destination: RdmaPort } | null;
  /** RoCE only (absent otherwise, so a TCP edge's digest is what it always was). */
  readonly rdmaRoute?: RouteGet;
}

export interface FingerprintResult {
  readonly fingerprint: LinkFingerprint;
  /** `sha256:` of the fingerprint: the edge measurement's input. */
  readonly digest: string;
  /**
   * What the route says about the measurement path: it does not leave by the fabric interface, it picks
   * another source address, or it resolves another destination. Empty when the path is the fabric.
   */
  readonly problems: ReadonlyArray<string>;
}

/** Lower-case, zero-padded GID groups, so `fe80::…` spellings from different tools agree. */
function normaliseGid(gid: string): string | null {
  const groups = gid.trim().toLowerCase().split(":");
  if (groups.length !== 8 || groups.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return null;
  return groups.map((g) => g.padStart(4, "0")).join(":");
}

function checkPort(side: string, p: RdmaPort | undefined, problems: string[]): RdmaPort | null {
  if (!p) {
    problems.push(`rdma.${side} is missing`);
    return null;
  }
  if (typeof p.hca !== "string" || !/^[A-Za-z0-9_.-]+$/.test(p.hca)) problems.push(`rdma.${side}.hca ${JSON.stringify(p.hca)} (an HCA name such as mlx5_0)`);
  if (!(Number.isSafeInteger(p.port) && p.port >= 1)) problems.push(`rdma.${side}.port ${JSON.stringify(p.port)} (1 or more)`);
  const noGid = p.gidIndex === null && (p.gid === null || p.gid === undefined);
  if (!noGid && !(Number.isSafeInteger(p.gidIndex) && p.gidIndex! >= 0 && p.gidIndex! <= 255)) problems.push(`rdma.${side}.gidIndex ${JSON.stringify(p.gidIndex)} (0-255)`);
  const gid = typeof p.gid === "string" ? normaliseGid(p.gid) : null;
  if (!noGid && gid === null) problems.push(`rdma.${side}.gid ${JSON.stringify(p.gid)} (eight colon-separated hex groups)`);
  const observed = Object.fromEntries((["gidType", "netdev", "linkLayer", "state", "rate", "activeMtu"] as const).filter((k) => p[k] !== undefined).map((k) => [k, p[k]]));
  return { hca: p.hca, port: p.port, gidIndex: noGid ? null : p.gidIndex, gid: noGid ? null : (gid ?? String(p.gid)), ...observed };
}

/** The fingerprint of one directed link, its digest, and what its route says about the path. */
export function linkFingerprint(i: LinkFingerprintInputs): FingerprintResult {
  const problems: string[] = [];
  const text = (v: unknown) => typeof v === "string" && v.trim() !== "";
  if (i.transport !== "tcp" && i.transport !== "ucx_rdma") problems.push(`transport ${JSON.stringify(i.transport)} (tcp or ucx_rdma)`);
  if (!text(i.source?.host)) problems.push("source.host is empty");
  if (!text(i.source?.interface)) problems.push("source.interface is empty");
  if (!text(i.source?.address)) problems.push("source.address is empty");
  if (!text(i.destination?.host)) problems.push("destination.host is empty");
  if (!text(i.destination?.address)) problems.push("destination.address is empty");
  if (!(Number.isSafeInteger(i.mtu) && i.mtu >= 68 && i.mtu <= 65536)) problems.push(`mtu ${JSON.stringify(i.mtu)} (68-65536)`);
  let rdma: LinkFingerprint["rdma"] = null;
  if (i.transport === "ucx_rdma") {
    const s = checkPort("source", i.rdma?.source, problems);
    const d = checkPort("destination", i.rdma?.destination, problems);
    if (s && d) rdma = { source: s, destination: d };
  }
  if (problems.length) throw new FabricError("NARWHAL_FABRIC_FINGERPRINT", `cannot fingerprint link ${i.source?.host}->${i.destination?.host}: ${problems.join(", ")}`);

  const route = typeof i.route === "string" ? parseRouteGet(i.route) : i.route;
  const rdmaRoute = rdma && i.rdmaRoute !== undefined ? (typeof i.rdmaRoute === "string" ? parseRouteGet(i.rdmaRoute) : i.rdmaRoute) : null;
  const fingerprint: LinkFingerprint = {
    transport: i.transport,
    source: { host: i.source.host, interface: i.source.interface, address: i.source.address },
    destination: { host: i.destination.host, address: i.destination.address },
    mtu: i.mtu,
    route: stableRoute(route),
    rdma,
    ...(rdmaRoute ? { rdmaRoute: stableRoute(rdmaRoute) } : {}),
  };

  const observations: string[] = [];
  if (route.destination !== i.destination.address) observations.push(`the route resolves ${route.destination}, not the destination address ${i.destination.address}`);
  if (route.device !== i.source.interface) observations.push(`the route leaves by ${route.device ?? "no device"}, not the fabric interface ${i.source.interface}`);
  const picked = route.source ?? route.from;
  if (picked !== null && picked !== i.source.address) observations.push(`the route's source address is ${picked}, not the fabric address ${i.source.address}`);
  if (route.type !== "unicast") observations.push(`the route is of type ${route.type}, not unicast: the traffic would not cross the fabric`);
  if (rdma && rdmaRoute) observations.push(...rdmaRouteProblems(rdma.source, rdmaRoute));
  return { fingerprint, digest: sha256Json(fingerprint), problems: observations };
}

function stableRoute(r: RouteGet): RouteGet {
  return { type: r.type, destination: r.destination, gateway: r.gateway, device: r.device, source: r.source, from: r.from, table: r.table, mtu: r.mtu ?? null };
}

/** RoCE v2 is routed IP/UDP: the GID-to-GID route must leave by the netdev that owns the source GID. */
function rdmaRouteProblems(source: RdmaPort, route: RouteGet): string[] {
  const out: string[] = [];
  const where = `the RDMA route from ${source.hca} port ${source.port}`;
  if (source.netdev && route.device !== source.netdev) {
    out.push(`${where} leaves by ${route.device ?? "no device"}, not ${source.netdev}, the netdev of GID index ${source.gidIndex}`);
  }
  if (route.type !== "unicast") out.push(`${where} is of type ${route.type}, not unicast`);
  return out;
}
