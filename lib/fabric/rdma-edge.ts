/**
 * What an RDMA (`ucx_rdma`) edge needs besides a TCP edge's path: each end's HCA port as sysfs shows it
 * (lib/discovery/rdma.ts), refused before anything is measured when it cannot carry the traffic (not
 * ACTIVE, no such GID index, GID families or types that differ between the ends), the GID-to-GID route
 * RoCE v2 traffic takes, and the port counters read before and after the measurement.
 *
 * Counters (kernel `counters/` and `hw_counters/`): `port_xmit_data` and `port_rcv_data` count octets
 * divided by 4; mlx5 counts only RoCE traffic in them on an Ethernet port, so the source's transmitted
 * and the destination's received data must grow by at least the bytes the test wrote, or the test did
 * not cross that HCA port. Error counters and the retransmission counters (where the driver exposes
 * them) are recorded as deltas, the runbook's "retransmissions or RDMA counters".
 */
import { shq } from "../shell";
import { FabricError } from "./errors";
import type { RdmaPort } from "./fingerprint";
import { findPort, rdmaPortProblems, selectGid, type RdmaInventory, type RdmaPortFacts, type SelectedGid } from "../discovery/rdma";

/** An edge end's configured HCA port (lib/fabric/mesh.ts `RdmaEnd`). */
export interface RdmaEndConfig {
  readonly hca: string;
  readonly port: number;
  readonly gidIndex: number | null;
}

/** One end as observed: the port's facts, the GID it uses, and what goes into the link fingerprint. */
export interface ObservedRdmaEnd {
  readonly host: string;
  readonly facts: RdmaPortFacts;
  readonly gid: SelectedGid | null;
  readonly fingerprint: RdmaPort;
}

/**
 * The end as observed (absent when its HCA or port is not there), and why it cannot carry RDMA traffic:
 * each problem names the host, HCA and port. A port that is there but down is observed, so its state
 * goes into the fingerprint, and refused.
 */
export function observeRdmaEnd(host: string, end: RdmaEndConfig, inv: RdmaInventory): { readonly end: ObservedRdmaEnd | null; readonly problems: string[] } {
  const problems = rdmaPortProblems(inv, end).map((p) => `host ${host}: ${p}`);
  const facts = findPort(inv, end);
  if (typeof facts === "string") return { end: null, problems };
  const gid = selectGid(facts, end.gidIndex);
  return {
    problems,
    end: {
      host,
      facts,
      gid,
      fingerprint: {
        hca: end.hca,
        port: end.port,
        gidIndex: gid?.index ?? null,
        gid: gid?.gid ?? null,
        gidType: gid?.type ?? null,
        netdev: gid?.netdev ?? facts.netdev?.name ?? null,
        linkLayer: facts.linkLayer,
        state: facts.state,
        rate: facts.rate,
        activeMtu: facts.activeMtu,
      },
    },
  };
}

const endName = (e: ObservedRdmaEnd) => `${e.host} ${e.facts.hca} port ${e.facts.port}`;

/**
 * What stops the two ends from connecting at all: different link layers, a GID on one end only, GIDs of
 * different families (perftest: "Found Incompatibility issue with GID types") or types (RoCE v1 and v2).
 */
export function rdmaPairProblems(source: ObservedRdmaEnd, destination: ObservedRdmaEnd): string[] {
  const out: string[] = [];
  const [s, d] = [source, destination];
  if (s.facts.linkLayer !== d.facts.linkLayer) {
    out.push(`${endName(s)} is ${s.facts.linkLayer ?? "of an unknown link layer"} but ${endName(d)} is ${d.facts.linkLayer ?? "of an unknown link layer"}: RDMA needs one fabric`);
    return out;
  }
  if ((s.gid === null) !== (d.gid === null)) {
    const [has, lacks] = s.gid ? [s, d] : [d, s];
    out.push(`${endName(has)} uses GID index ${has.gid!.index} but ${endName(lacks)} uses none: set rdma.gidIndex for both ends, or for neither`);
    return out;
  }
  if (s.gid && d.gid) {
    const family = (g: SelectedGid) => (g.ipv4 !== null ? "IPv4" : "IPv6");
    if (family(s.gid) !== family(d.gid)) {
      out.push(
        `GID index ${s.gid.index} on ${endName(s)} is ${family(s.gid)} (${s.gid.gid}) but GID index ${d.gid.index} on ${endName(d)} is ${family(d.gid)} (${d.gid.gid}): ` +
          "both ends need one address family (perftest: \"Found Incompatibility issue with GID types\"); choose rdma.gidIndex accordingly",
      );
    }
    if (s.gid.type !== null && d.gid.type !== null && s.gid.type !== d.gid.type) {
      out.push(`GID index ${s.gid.index} on ${endName(s)} is ${s.gid.type} but GID index ${d.gid.index} on ${endName(d)} is ${d.gid.type}: both ends need one RoCE version`);
    }
  }
  return out;
}

/** The address a GID's RoCE v2 packets carry: its IPv4 address, or the IPv6 address it is (null for link-local and IB). */
export function gidAddress(gid: SelectedGid | null): string | null {
  if (!gid || gid.type !== "RoCE v2") return null;
  if (gid.ipv4 !== null) return gid.ipv4;
  if (gid.gid.startsWith("fe80:")) return null;
  return gid.gid
    .split(":")
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":");
}

const ROUTE_MARK = "@@narwhal-rdma-route";

/** `ip route get <peer GID address> from <own GID address>`, with its exit status; null when the GIDs are not routed (IB, link-local). */
export function rdmaRouteScript(own: SelectedGid | null, peer: SelectedGid | null): string | null {
  const from = gidAddress(own);
  const to = gidAddress(peer);
  if (from === null || to === null) return null;
  return `out=$(ip route get ${shq(to)} from ${shq(from)} 2>&1); printf '${ROUTE_MARK} %s\\n%s\\n' "$?" "$out"\n`;
}

/** Parses {@link rdmaRouteScript}'s output. */
export function parseRdmaRoute(host: string, text: string): { text: string; exitStatus: number } {
  const m = new RegExp(`^${ROUTE_MARK} (\\d+)\\n([\\s\\S]*)$`, "m").exec(text);
  if (!m) throw new FabricError("NARWHAL_FABRIC_PATH", `host ${host}: the RDMA route observation printed no result: ${JSON.stringify(text.slice(0, 200))}`);
  return { exitStatus: Number(m[1]), text: m[2].trim() };
}

// ---------- counters ----------

/** Link error counters (`counters/`): any growth during the test is reported. */
export const ERROR_COUNTERS = [
  "symbol_error",
  "link_error_recovery",
  "link_downed",
  "port_rcv_errors",
  "port_rcv_remote_physical_errors",
  "port_rcv_switch_relay_errors",
  "port_xmit_discards",
  "port_xmit_constraint_errors",
  "port_rcv_constraint_errors",
  "local_link_integrity_errors",
  "excessive_buffer_overrun_errors",
  "VL15_dropped",
] as const;

/** Requester-side retransmissions (the sender's `hw_counters/`): their growth is the edge's retransmit count. */
export const SENDER_RETRANSMISSION_COUNTERS = ["local_ack_timeout_err", "packet_seq_err", "implied_nak_seq_err"] as const;

/** Every `hw_counters/` entry that speaks of loss, retries or congestion, on either side. */
export const RETRANSMISSION_COUNTERS = [
  ...SENDER_RETRANSMISSION_COUNTERS,
  "rnr_nak_retry_err",
  "req_transport_retries_exceeded",
  "req_rnr_retries_exceeded",
  "out_of_sequence",
  "duplicate_request",
  "out_of_buffer",
  "roce_adp_retrans",
  "roce_adp_retrans_to",
  "roce_slow_restart",
  "np_ecn_marked_roce_packets",
  "np_cnp_sent",
  "rp_cnp_handled",
] as const;

/** The largest 32-bit value: a basic (not extended) PortCounters counter stops there (IB spec: saturating). */
const SATURATED_32 = 4294967295;

export interface PortCounters {
  readonly counters: Readonly<Record<string, number>> | null;
  readonly hwCounters: Readonly<Record<string, number>> | null;
}

/** Per counter, after − before; a counter that went backwards (reset, wrapped) or sits at 2^32−1 is null. */
function deltas(before: Readonly<Record<string, number>> | null, after: Readonly<Record<string, number>> | null): Record<string, number | null> | null {
  if (!before || !after) return null;
  const out: Record<string, number | null> = {};
  for (const k of Object.keys(after).sort()) {
    if (!(k in before)) continue;
    out[k] = after[k] < before[k] || after[k] === SATURATED_32 ? null : after[k] - before[k];
  }
  return out;
}

export interface EndCounters {
  readonly host: string;
  readonly hca: string;
  readonly port: number;
  readonly before: PortCounters;
  readonly after: PortCounters;
  readonly delta: { readonly counters: Record<string, number | null> | null; readonly hwCounters: Record<string, number | null> | null };
}

export interface RdmaCounterEvidence {
  readonly source: EndCounters;
  readonly destination: EndCounters;
  /** Δport_xmit_data × 4 on the source, Δport_rcv_data × 4 on the destination; null when not readable. */
  readonly sourceXmitBytes: number | null;
  readonly destinationRcvBytes: number | null;
  /** Error counters that grew, `<host> <hca>/<port> <counter>` → growth. */
  readonly errors: Readonly<Record<string, number>>;
  /** Retransmission and congestion counters that grew, named the same way. */
  readonly retransmissionCounters: Readonly<Record<string, number>>;
  /** The sender's requester-side retransmissions; null when its driver exposes none of them. */
  readonly retransmits: number | null;
}

function endCounters(host: string, hca: string, port: number, before: PortCounters, after: PortCounters): EndCounters {
  return { host, hca, port, before, after, delta: { counters: deltas(before.counters, after.counters), hwCounters: deltas(before.hwCounters, after.hwCounters) } };
}

/** The evidence of the counters read on both ends before and after the test. */
export function rdmaCounterEvidence(
  ends: { source: { host: string; hca: string; port: number }; destination: { host: string; hca: string; port: number } },
  before: { source: PortCounters; destination: PortCounters },
  after: { source: PortCounters; destination: PortCounters },
): RdmaCounterEvidence {
  const source = endCounters(ends.source.host, ends.source.hca, ends.source.port, before.source, after.source);
  const destination = endCounters(ends.destination.host, ends.destination.hca, ends.destination.port, before.destination, after.destination);
  const times4 = (v: number | null | undefined) => (typeof v === "number" ? v * 4 : null);
  const errors: Record<string, number> = {};
  const retransmissionCounters: Record<string, number> = {};
  for (const e of [source, destination]) {
    const name = `${e.host} ${e.hca}/${e.port}`;
    for (const k of ERROR_COUNTERS) {
      const v = e.delta.counters?.[k];
      if (typeof v === "number" && v > 0) errors[`${name} ${k}`] = v;
    }
    for (const k of RETRANSMISSION_COUNTERS) {
      const v = e.delta.hwCounters?.[k];
      if (typeof v === "number" && v > 0) retransmissionCounters[`${name} ${k}`] = v;
    }
  }
  const exposed = SENDER_RETRANSMISSION_COUNTERS.filter((k) => typeof source.delta.hwCounters?.[k] === "number");
  return {
    source,
    destination,
    sourceXmitBytes: times4(source.delta.counters?.port_xmit_data),
    destinationRcvBytes: times4(destination.delta.counters?.port_rcv_data),
    errors,
    retransmissionCounters,
    retransmits: exposed.length ? exposed.reduce((sum, k) => sum + (source.delta.hwCounters![k] as number), 0) : null,
  };
}

/**
 * Why the counters say the test did not cross the configured ports: the source's transmitted or the
 * destination's received data grew by less than the bytes written. Empty when they agree, or when a
 * counter could not be read (that is recorded, not judged).
 */
export function counterProblems(c: RdmaCounterEvidence, payloadBytes: number): string[] {
  const out: string[] = [];
  const check = (bytes: number | null, end: EndCounters, what: string) => {
    if (bytes !== null && bytes < payloadBytes) {
      out.push(`${end.host} ${end.hca} port ${end.port} ${what} ${bytes} bytes (Δ${what === "sent" ? "port_xmit_data" : "port_rcv_data"} × 4) while the test wrote ${payloadBytes}: the traffic did not cross this port`);
    }
  };
  check(c.sourceXmitBytes, c.source, "sent");
  check(c.destinationRcvBytes, c.destination, "received");
  return out;
}

/** The counters of one port read by lib/discovery/rdma.ts, or all null when the port was not found. */
export function portCountersOf(inv: RdmaInventory, end: Pick<RdmaEndConfig, "hca" | "port">): PortCounters {
  const p = findPort(inv, end);
  return typeof p === "string" ? { counters: null, hwCounters: null } : { counters: p.counters, hwCounters: p.hwCounters };
}
