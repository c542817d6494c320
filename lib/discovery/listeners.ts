/**
 * TCP listeners on a host (`ss -ltnpH`) and the runbook's rule that any existing listener on a planned
 * HTTP, attestation, NIXL side-channel or transfer port blocks launch until its ownership is resolved.
 */

export interface ListenerOwner {
  readonly name: string;
  readonly pid: number;
}

export interface Listener {
  /** Without brackets or zone: "0.0.0.0", "::", "198.18.0.12", "*" (any family), "fe80::1". */
  readonly address: string;
  readonly port: number;
  /** The `%iface` suffix ss prints for a socket bound to a device or a scoped address. */
  readonly interface?: string;
  /** Empty when ss could not see the owner (another user's process without root). */
  readonly owners: ReadonlyArray<ListenerOwner>;
}

/** `("name",pid=N,fd=M)`, or `("name",N,M)` from iproute2 before 3.x-era pid= labels. */
const OWNER = /\("((?:[^"\\]|\\.)*)",(?:pid=)?(\d+),(?:fd=)?\d+\)/g;

/** Splits `addr:port` as ss prints it: `0.0.0.0:22`, `[::]:22`, `*:80`, `127.0.0.53%lo:53`, `:::22` (old ss). */
function splitLocal(text: string): { address: string; port: number; interface?: string } | null {
  const colon = text.lastIndexOf(":");
  if (colon < 0) return null;
  const portText = text.slice(colon + 1);
  const port = Number(portText);
  if (!/^\d{1,5}$/.test(portText) || port > 65535) return null;
  let host = text.slice(0, colon);
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  let iface: string | undefined;
  const pct = host.indexOf("%");
  if (pct >= 0) {
    iface = host.slice(pct + 1);
    host = host.slice(0, pct);
  }
  if (host === "") host = "::"; // `:::22` from iproute2 before brackets
  return iface ? { address: host, port, interface: iface } : { address: host, port };
}

/**
 * Parses `ss -ltnpH` (or `ss -ltnp`, whose header line is skipped). Each line is
 * `State Recv-Q Send-Q Local Peer [users:(("name",pid=N,fd=M),...)]`; very old ss omits State.
 * Unparseable lines throw, naming the line.
 */
export function parseListeners(text: string): Listener[] {
  const out: Listener[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || /^(State|Recv-Q|Netid)\b/.test(line)) continue;
    const fields = line.split(/\s+/);
    const offset = /^\d+$/.test(fields[0] ?? "") ? 0 : 1;
    const queues = fields.slice(offset, offset + 2).every((f) => /^\d+$/.test(f));
    const local = fields[offset + 2];
    const parsed = queues && local ? splitLocal(local) : null;
    if (!parsed) throw new Error(`unexpected ss line: ${JSON.stringify(line.slice(0, 200))}`);
    const owners: ListenerOwner[] = [];
    for (const m of line.matchAll(OWNER)) {
      const owner = { name: m[1].replace(/\\(.)/g, "$1"), pid: Number(m[2]) };
      if (!owners.some((o) => o.pid === owner.pid && o.name === owner.name)) owners.push(owner);
    }
    out.push({ ...parsed, owners });
  }
  return out;
}

export type PlannedPortKind = "engine" | "attestation" | "nixl" | "transfer";

/** One port (or range) an engine will listen on. */
export type PlannedPort =
  | { readonly engineId: string; readonly kind: PlannedPortKind; readonly port: number }
  | { readonly engineId: string; readonly kind: PlannedPortKind; readonly range: readonly [number, number] };

export interface PortConflict {
  readonly engineId: string;
  readonly kind: PlannedPortKind;
  /** The busy port (inside the planned range for a range). */
  readonly port: number;
  readonly range?: readonly [number, number];
  /** Every listener on that port (e.g. 0.0.0.0 and ::), and their owners without the ignored pids. */
  readonly listeners: ReadonlyArray<Listener>;
  readonly owners: ReadonlyArray<ListenerOwner>;
  /** Operator-facing: which engine, which port, which host, which process, what to do. */
  readonly message: string;
}

const KIND_WORDS: Record<PlannedPortKind, string> = {
  engine: "engine HTTP port",
  attestation: "attestation port",
  nixl: "NIXL side-channel port",
  transfer: "transfer port",
};

function ownersText(owners: ReadonlyArray<ListenerOwner>): string {
  if (owners.length === 0) return "a process ss could not name (run `ss -ltnp` as root to see it)";
  return owners.map((o) => `${o.name} (pid ${o.pid})`).join(", ");
}

/**
 * Planned ports that a listener already holds, whatever address it is bound to. `ignorePids` excludes
 * listeners owned only by the given processes (e.g. the engine being re-checked after its own start).
 */
export function busyPlannedPorts(
  listeners: ReadonlyArray<Listener>,
  planned: ReadonlyArray<PlannedPort>,
  opts: { readonly host: string; readonly ignorePids?: ReadonlyArray<number> },
): PortConflict[] {
  const ignored = new Set(opts.ignorePids ?? []);
  const relevant = listeners.filter((l) => l.owners.length === 0 || l.owners.some((o) => !ignored.has(o.pid)));
  const byPort = new Map<number, Listener[]>();
  for (const l of relevant) byPort.set(l.port, [...(byPort.get(l.port) ?? []), l]);
  const ports = [...byPort.keys()].sort((a, b) => a - b);
  const conflicts: PortConflict[] = [];
  for (const p of planned) {
    const [lo, hi] = "range" in p ? p.range : [p.port, p.port];
    for (const port of ports.filter((n) => n >= lo && n <= hi)) {
      const holders = byPort.get(port)!;
      const owners: ListenerOwner[] = [];
      for (const o of holders.flatMap((l) => l.owners)) {
        if (!ignored.has(o.pid) && !owners.some((x) => x.pid === o.pid)) owners.push(o);
      }
      const by = ownersText(owners);
      const where = `on host ${opts.host}`;
      const message =
        "range" in p
          ? `engine ${p.engineId}: planned ${KIND_WORDS[p.kind]} range ${lo}-${hi} ${where} includes port ${port}, already in use by ${by}; stop it or choose another range`
          : `engine ${p.engineId}: planned ${KIND_WORDS[p.kind]} ${port} ${where} is already in use by ${by}; stop it or choose another port`;
      conflicts.push({ engineId: p.engineId, kind: p.kind, port, ...("range" in p ? { range: p.range } : {}), listeners: holders, owners, message });
    }
  }
  return conflicts;
}
