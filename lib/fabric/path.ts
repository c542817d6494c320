/**
 * One host's side of a directed edge, observed cheaply (no traffic): the fabric interface's MTU and
 * addresses, `ip route get <peer> from <own address>`, and the route files (routing tables and rules).
 *
 * An edge is observed from both ends. The source's side is the forward path the payload takes; the
 * destination's side is the return path its acknowledgements take, so a route or MTU change on either
 * host moves the edge's fingerprint and replaces exactly the edges that touch that host.
 */
import { sha256Json } from "../digest";
import { shq } from "../shell";
import { FabricError } from "./errors";
import { linkFingerprint, type FingerprintResult, type LinkFingerprintInputs } from "./fingerprint";

/** One end of an edge: its host alias, fabric interface and fabric address. */
export interface PathEnd {
  readonly host: string;
  readonly interface: string;
  readonly address: string;
}

/** What one host showed about its side of the path. */
export interface PathObservation {
  /** `/sys/class/net/<interface>/mtu`, null when unreadable. */
  readonly mtu: number | null;
  /** Global addresses on the interface, without prefix length. */
  readonly addresses: ReadonlyArray<string>;
  /** `ip route get <peer> from <address>`: its text and exit status. */
  readonly route: { readonly text: string; readonly exitStatus: number };
  /** The route files: `ip route show table all` (v4 and v6) and `ip rule show` (v4 and v6), as printed. */
  readonly routeFiles: Readonly<Record<string, string>>;
}

const SECTIONS = ["mtu", "addresses", "route", "routes4", "routes6", "rules4", "rules6"] as const;
const MARK = "@@narwhal-fabric-path";

/** The script that observes `end`'s side of the path towards `peerAddress`; read-only. */
export function pathObservationScript(end: PathEnd, peerAddress: string): string {
  const commands: Record<(typeof SECTIONS)[number], string> = {
    mtu: `cat /sys/class/net/${shq(end.interface)}/mtu`,
    addresses: `ip -o addr show dev ${shq(end.interface)} scope global`,
    route: `ip route get ${shq(peerAddress)} from ${shq(end.address)}`,
    routes4: "ip -4 route show table all",
    routes6: "ip -6 route show table all",
    rules4: "ip -4 rule show",
    rules6: "ip -6 rule show",
  };
  // Each section prints its exit status on its marker line so a failed command is an observation, not an abort.
  return SECTIONS.map((name) => `out=$(${commands[name]} 2>&1); printf '${MARK} ${name} %s\\n%s\\n' "$?" "$out"`).join("\n") + "\n";
}

/** Parses {@link pathObservationScript}'s output; throws `NARWHAL_FABRIC_PATH` when a section is missing. */
export function parsePathObservation(host: string, text: string): PathObservation {
  const found = new Map<string, { exitStatus: number; body: string }>();
  const re = new RegExp(`^${MARK} (\\S+) (\\d+)$`, "gm");
  const marks = [...text.matchAll(re)];
  marks.forEach((m, i) => {
    const start = m.index + m[0].length + 1;
    const end = i + 1 < marks.length ? marks[i + 1].index : text.length;
    found.set(m[1], { exitStatus: Number(m[2]), body: text.slice(start, end).replace(/\n$/, "") });
  });
  const missing = SECTIONS.filter((s) => !found.has(s));
  if (missing.length) throw new FabricError("NARWHAL_FABRIC_PATH", `host ${host}: the path observation printed no ${missing.join(", ")} section`);
  const get = (s: (typeof SECTIONS)[number]) => found.get(s)!;
  const mtuText = get("mtu").body.trim();
  const addresses = [...get("addresses").body.matchAll(/\binet6?\s+([0-9A-Fa-f:.]+)\/\d+/g)].map((m) => m[1]);
  return {
    mtu: get("mtu").exitStatus === 0 && /^\d+$/.test(mtuText) ? Number(mtuText) : null,
    addresses,
    route: { text: get("route").body.trim(), exitStatus: get("route").exitStatus },
    routeFiles: Object.fromEntries((["routes4", "routes6", "rules4", "rules6"] as const).map((s) => [s, get(s).body])),
  };
}

/** A side that could be fingerprinted, or why it could not. */
export type PathFingerprint = ({ readonly ok: true } & FingerprintResult) | { readonly ok: false; readonly reason: string; readonly digest: string };

/**
 * The link fingerprint of `from`'s side towards `to`. Not ok when the interface has no MTU, the address
 * is no longer on it, or the route cannot be resolved; its digest then differs from every real one, so a
 * refresh that sees this replaces the edge.
 */
export function pathFingerprint(
  transport: LinkFingerprintInputs["transport"],
  from: PathEnd,
  to: Pick<PathEnd, "host" | "address">,
  seen: PathObservation,
  rdma?: LinkFingerprintInputs["rdma"],
  rdmaRoute?: { readonly text: string; readonly exitStatus: number },
): PathFingerprint {
  const reasons: string[] = [];
  if (seen.mtu === null) reasons.push(`interface ${from.interface} has no readable MTU (is it there?)`);
  if (!seen.addresses.includes(from.address)) {
    reasons.push(`address ${from.address} is not on ${from.interface} (it holds ${seen.addresses.length ? seen.addresses.join(", ") : "no global address"})`);
  }
  if (seen.route.exitStatus !== 0) reasons.push(`\`ip route get ${to.address} from ${from.address}\` failed: ${seen.route.text.split("\n")[0]}`);
  if (rdmaRoute && rdmaRoute.exitStatus !== 0) reasons.push(`the RDMA route (\`ip route get\` between the GIDs' addresses) failed: ${rdmaRoute.text.split("\n")[0]}`);
  if (reasons.length === 0) {
    try {
      const r = linkFingerprint({ transport, source: from, destination: to, mtu: seen.mtu!, route: seen.route.text, rdma, ...(rdmaRoute ? { rdmaRoute: rdmaRoute.text } : {}) });
      return { ok: true, ...r };
    } catch (err) {
      reasons.push((err as Error).message);
    }
  }
  const reason = `host ${from.host}, path to ${to.host}: ${reasons.join("; ")}`;
  return { ok: false, reason, digest: sha256Json({ unobservable: reason }) };
}
