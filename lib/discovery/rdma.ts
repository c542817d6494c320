/**
 * A host's RDMA HCAs as Linux shows them under /sys/class/infiniband: each device's ports with their
 * state, link layer, rate, GID table (types and netdevs) and, when asked, the port counters; the
 * netdev a RoCE port runs on and that netdev's MTU. Used by discovery (every HCA on the host) and by a
 * `ucx_rdma` fabric edge (its two HCA ports, with counters before and after the measurement).
 *
 * The remote side is one shell function that prints every file as `<dev>/<path>:<value>` (one `grep -r`
 * per call, so a 255-entry GID table costs no process per file). Facts come from the kernel's formats
 * (drivers/infiniband/core/sysfs.c): `state` "4: ACTIVE", `phys_state` "5: LinkUp", `link_layer`
 * "InfiniBand" | "Ethernet", `rate` "200 Gb/sec (4X HDR)", `gids/<i>` eight uncompressed hex groups,
 * `gid_attrs/types/<i>` "RoCE v2" | "IB/RoCE v1", `gid_attrs/ndevs/<i>` a netdev name. An empty GID slot
 * reads as the all-zero GID and its `types`/`ndevs` reads fail (EINVAL), so the function drops zero GIDs
 * and a failed read is simply absent.
 *
 * There is no MTU file under `ports/<n>`: the active MTU comes from `ibv_devinfo` when the host has it,
 * else, on a RoCE port, from its netdev's MTU as mlx5 derives it (`iboe_get_mtu`: minus 96 header bytes,
 * rounded down to 4096/2048/1024/512/256).
 */
import { shq } from "../shell";

/** Which ports to read: one HCA port, or every port of every HCA. */
export interface RdmaSelection {
  /** An HCA name (mlx5_0); every HCA when absent. */
  readonly hca?: string;
  /** A port number; every port when absent. */
  readonly port?: number;
  /** Also read `counters/` and `hw_counters/` (the edge's before and after). */
  readonly counters?: boolean;
}

/**
 * `rdma_sysfs <hca|*> <port|*> <0|1>` and `rdma_devinfo <hca|->`: shell functions shared by the discovery
 * probe and the edge's observation. Both only read; neither fails when the host has no HCA.
 */
export const RDMA_SH = `rdma_sysfs() {
  [ -d /sys/class/infiniband ] || { echo "absent"; return 0; }
  echo "present"
  ( cd /sys/class/infiniband || exit 0
    for _i_dev in $1; do
      [ -e "$_i_dev" ] || continue
      _i_pci=$(readlink -f "$_i_dev/device" 2>/dev/null) && printf '%s/pci:%s\\n' "$_i_dev" "\${_i_pci##*/}"
      for _i_net in "$_i_dev"/device/net/*; do
        [ -e "$_i_net" ] || continue
        _i_n=\${_i_net##*/}
        printf '%s/net:%s\\n' "$_i_dev" "$_i_n"
        for _i_f in mtu operstate carrier; do
          _i_v=$(cat "/sys/class/net/$_i_n/$_i_f" 2>/dev/null) && printf '%s/net/%s/%s:%s\\n' "$_i_dev" "$_i_n" "$_i_f" "$_i_v"
        done
      done
      for _i_port in "$_i_dev"/ports/$2; do
        [ -d "$_i_port/gids" ] && printf '%s/gid_tbl_len:%s\\n' "$_i_port" "$(ls "$_i_port/gids" | wc -l)"
      done
    done
    _i_files="node_type node_guid fw_ver ports/$2/state ports/$2/phys_state ports/$2/link_layer ports/$2/rate ports/$2/lid ports/$2/gids ports/$2/gid_attrs"
    [ "$3" = 1 ] && _i_files="$_i_files ports/$2/counters ports/$2/hw_counters"
    _i_paths=
    for _i_dev in $1; do
      for _i_f in $_i_files; do _i_paths="$_i_paths $_i_dev/$_i_f"; done
    done
    # shellcheck disable=SC2086 # the paths are globs on purpose
    grep -s -H -r '' $_i_paths | grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$'
  )
  return 0
}
rdma_devinfo() {
  command -v ibv_devinfo >/dev/null 2>&1 || { echo "absent"; return 0; }
  echo "present"
  if [ "$1" = - ]; then ibv_devinfo </dev/null 2>&1; else ibv_devinfo -d "$1" </dev/null 2>&1; fi
  return 0
}
`;

/** The call that prints one selection's `@@<prefix>` and `@@<prefix>_devinfo` sections. */
export function rdmaSysfsCall(sel: RdmaSelection, prefix = "rdma"): string {
  if (sel.hca !== undefined && !/^[A-Za-z0-9_.-]+$/.test(sel.hca)) throw new Error(`not an HCA name: ${JSON.stringify(sel.hca)}`);
  if (sel.port !== undefined && !(Number.isSafeInteger(sel.port) && sel.port >= 1)) throw new Error(`not an HCA port: ${JSON.stringify(sel.port)}`);
  const hca = sel.hca ?? "*";
  const port = sel.port === undefined ? "*" : String(sel.port);
  return [
    `printf '\\n@@%s\\n' ${shq(prefix)}`,
    `rdma_sysfs ${shq(hca)} ${shq(port)} ${sel.counters ? 1 : 0}`,
    `printf '\\n@@%s\\n' ${shq(`${prefix}_devinfo`)}`,
    `rdma_devinfo ${shq(sel.hca ?? "-")}`,
  ].join("\n");
}

/** A standalone script (for `sh -s`) that reads one selection. */
export function rdmaSysfsScript(sel: RdmaSelection, prefix = "rdma"): string {
  return `${RDMA_SH}${rdmaSysfsCall(sel, prefix)}\n`;
}

// ---------- what was read ----------

export type GidType = "RoCE v2" | "IB/RoCE v1";

export interface RdmaGid {
  readonly index: number;
  /** As sysfs prints it: eight four-digit hex groups, lower case. */
  readonly gid: string;
  /** `gid_attrs/types/<i>`; null when the read failed (InfiniBand GIDs on some drivers). */
  readonly type: GidType | null;
  /** `gid_attrs/ndevs/<i>`: the netdev the GID belongs to (RoCE); null on InfiniBand. */
  readonly netdev: string | null;
  /** The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d), else null. */
  readonly ipv4: string | null;
}

export interface RdmaNetdev {
  readonly name: string;
  readonly mtu: number | null;
  /** `operstate`: up, down, lowerlayerdown, … */
  readonly operstate: string | null;
  /** `carrier`: 1, 0, or null when the read failed (the interface is down). */
  readonly carrier: number | null;
}

export interface RdmaPortFacts {
  readonly hca: string;
  readonly port: number;
  /** `state` as printed ("4: ACTIVE") and its name ("ACTIVE"). */
  readonly state: string | null;
  readonly stateName: string | null;
  /** `phys_state` as printed ("5: LinkUp"). */
  readonly physState: string | null;
  readonly linkLayer: string | null;
  /** `rate` as printed ("200 Gb/sec (4X HDR)") and its Gbit/s. */
  readonly rate: string | null;
  readonly rateGbps: number | null;
  readonly lid: string | null;
  /** Entries under `gids/`, empty ones included; null when the directory is not there. */
  readonly gidTableLength: number | null;
  /** The non-zero GIDs, by index. */
  readonly gids: ReadonlyArray<RdmaGid>;
  /** The netdev of a RoCE port: its HCA's `device/net/` entry (a GID's own netdev wins when they differ). */
  readonly netdev: RdmaNetdev | null;
  /** Bytes; from `ibv_devinfo` when the host has it, else (RoCE) from the netdev's MTU. */
  readonly activeMtu: number | null;
  readonly activeMtuSource: "ibv_devinfo" | "netdev" | null;
  /** `counters/<name>` and `hw_counters/<name>` when they were read (null: not read, or not exposed). */
  readonly counters: Readonly<Record<string, number>> | null;
  readonly hwCounters: Readonly<Record<string, number>> | null;
}

export interface RdmaDevice {
  readonly name: string;
  /** The PCI function the HCA is (the `device` link's target). */
  readonly pciAddress: string | null;
  readonly nodeType: string | null;
  readonly nodeGuid: string | null;
  readonly fwVer: string | null;
  readonly netdevs: ReadonlyArray<string>;
  readonly ports: ReadonlyArray<RdmaPortFacts>;
}

export interface RdmaInventory {
  /** False when the host has no /sys/class/infiniband at all (no RDMA driver loaded). */
  readonly present: boolean;
  readonly devices: ReadonlyArray<RdmaDevice>;
  /** Whether `ibv_devinfo` was on the host's PATH. */
  readonly ibvDevinfo: boolean;
}

const ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000";

/** "200 Gb/sec (4X HDR)" → 200; "2.5 Gb/sec (1X SDR)" → 2.5. */
export function rateGbps(rate: string | null): number | null {
  const m = rate === null ? null : /^(\d+(?:\.\d+)?) Gb\/sec/.exec(rate);
  return m ? Number(m[1]) : null;
}

/** mlx5's RoCE active MTU from the netdev MTU (`iboe_get_mtu`, capped at the port's 4096 maximum). */
export function roceActiveMtu(netdevMtu: number): number | null {
  const payload = netdevMtu - 96;
  for (const mtu of [4096, 2048, 1024, 512, 256]) if (payload >= mtu) return mtu;
  return null;
}

/** The IPv4 address an IPv4-mapped GID carries (0000:…:ffff:c612:0032 → 198.18.0.50). */
export function gidIpv4(gid: string): string | null {
  const g = gid.toLowerCase().split(":");
  if (g.length !== 8 || g.slice(0, 5).some((x) => !/^0{1,4}$/.test(x)) || g[5] !== "ffff") return null;
  const a = parseInt(g[6], 16);
  const b = parseInt(g[7], 16);
  return [a >> 8, a & 0xff, b >> 8, b & 0xff].join(".");
}

/** perftest prints a GID's 16 bytes in decimal, two digits at least (`%02d`): what its `GID:` lines show. */
export function gidDecimal(gid: string): string {
  return gid
    .split(":")
    .flatMap((g) => [parseInt(g.slice(0, 2), 16), parseInt(g.slice(2, 4), 16)])
    .map((b) => String(b).padStart(2, "0"))
    .join(":");
}

/** `ibv_devinfo`'s active MTU per `<hca>/<port>`. */
export function parseIbvDevinfo(text: string): Map<string, number> {
  const out = new Map<string, number>();
  let hca: string | null = null;
  let port: number | null = null;
  for (const line of text.split("\n")) {
    let m: RegExpExecArray | null;
    if ((m = /^hca_id:\s*(\S+)/.exec(line))) [hca, port] = [m[1], null];
    else if ((m = /^\s+port:\s*(\d+)/.exec(line))) port = Number(m[1]);
    else if ((m = /^\s+active_mtu:\s*(\d+)/.exec(line)) && hca !== null && port !== null) out.set(`${hca}/${port}`, Number(m[1]));
  }
  return out;
}

function num(v: string | undefined): number | null {
  return v !== undefined && /^\d+$/.test(v.trim()) ? Number(v.trim()) : null;
}

/**
 * Parses what {@link rdmaSysfsCall} printed: the `@@rdma` body and, optionally, the `@@rdma_devinfo` one.
 * Lines it does not know are ignored; a port is listed once any of its files was read.
 */
export function parseRdmaSysfs(text: string, devinfoText?: string): RdmaInventory {
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  const present = lines[0]?.trim() === "present";
  const devinfoLines = (devinfoText ?? "").split("\n");
  const ibvDevinfo = devinfoLines.find((l) => l.trim() !== "")?.trim() === "present";
  const devinfo = ibvDevinfo ? parseIbvDevinfo(devinfoLines.slice(devinfoLines.findIndex((l) => l.trim() === "present") + 1).join("\n")) : new Map<string, number>();

  type PortDraft = { files: Map<string, string>; gids: Map<number, string>; types: Map<number, string>; ndevs: Map<number, string>; counters: Map<string, number>; hw: Map<string, number>; table: number | null };
  type DevDraft = { files: Map<string, string>; netdevs: string[]; net: Map<string, Map<string, string>>; ports: Map<number, PortDraft> };
  const devices = new Map<string, DevDraft>();
  const dev = (name: string): DevDraft => {
    let d = devices.get(name);
    if (!d) devices.set(name, (d = { files: new Map(), netdevs: [], net: new Map(), ports: new Map() }));
    return d;
  };
  const portOf = (d: DevDraft, n: number): PortDraft => {
    let p = d.ports.get(n);
    if (!p) d.ports.set(n, (p = { files: new Map(), gids: new Map(), types: new Map(), ndevs: new Map(), counters: new Map(), hw: new Map(), table: null }));
    return p;
  };

  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const path = line.slice(0, colon).split("/");
    const value = line.slice(colon + 1).trim();
    const [name, ...rest] = path;
    if (!name || !/^[A-Za-z0-9_.-]+$/.test(name)) continue;
    const d = dev(name);
    if (rest.length === 1) {
      if (rest[0] === "net") d.netdevs.push(value);
      else d.files.set(rest[0], value);
      continue;
    }
    if (rest[0] === "net" && rest.length === 3) {
      if (!d.net.has(rest[1])) d.net.set(rest[1], new Map());
      d.net.get(rest[1])!.set(rest[2], value);
      continue;
    }
    if (rest[0] !== "ports" || !/^\d+$/.test(rest[1] ?? "")) continue;
    const p = portOf(d, Number(rest[1]));
    const [kind, a, b] = rest.slice(2);
    if (kind === "gid_tbl_len" && a === undefined) p.table = num(value);
    else if (kind === "gids" && /^\d+$/.test(a ?? "") && b === undefined) p.gids.set(Number(a), value.toLowerCase());
    else if (kind === "gid_attrs" && a === "types" && /^\d+$/.test(b ?? "")) p.types.set(Number(b), value);
    else if (kind === "gid_attrs" && a === "ndevs" && /^\d+$/.test(b ?? "")) p.ndevs.set(Number(b), value);
    else if (kind === "counters" && a && b === undefined && num(value) !== null) p.counters.set(a, num(value)!);
    // `lifespan` sets how often the values refresh (ms); it counts nothing.
    else if (kind === "hw_counters" && a && a !== "lifespan" && b === undefined && num(value) !== null) p.hw.set(a, num(value)!);
    else if (kind && a === undefined) p.files.set(kind, value);
  }

  const out: RdmaDevice[] = [];
  for (const [name, d] of [...devices].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const netdevFacts = (n: string): RdmaNetdev => {
      const f = d.net.get(n);
      return { name: n, mtu: num(f?.get("mtu")), operstate: f?.get("operstate") ?? null, carrier: num(f?.get("carrier")) };
    };
    const ports: RdmaPortFacts[] = [...d.ports]
      .sort(([a], [b]) => a - b)
      .map(([n, p]) => {
        const gids: RdmaGid[] = [...p.gids]
          .filter(([, g]) => g !== ZERO_GID)
          .sort(([a], [b]) => a - b)
          .map(([index, gid]) => {
            const type = p.types.get(index);
            return { index, gid, type: type === "RoCE v2" || type === "IB/RoCE v1" ? type : null, netdev: p.ndevs.get(index) ?? null, ipv4: gidIpv4(gid) };
          });
        const state = p.files.get("state") ?? null;
        const linkLayer = p.files.get("link_layer") ?? null;
        const netdevName = gids.find((g) => g.netdev !== null)?.netdev ?? (linkLayer === "Ethernet" ? (d.netdevs[0] ?? null) : null);
        const netdev = netdevName === null ? null : netdevFacts(netdevName);
        const fromDevinfo = devinfo.get(`${name}/${n}`);
        const fromNetdev = linkLayer === "Ethernet" && netdev?.mtu != null ? roceActiveMtu(netdev.mtu) : null;
        const rate = p.files.get("rate") ?? null;
        return {
          hca: name,
          port: n,
          state,
          stateName: state === null ? null : (/^\d+:\s*(.+)$/.exec(state)?.[1] ?? state),
          physState: p.files.get("phys_state") ?? null,
          linkLayer,
          rate,
          rateGbps: rateGbps(rate),
          lid: p.files.get("lid") ?? null,
          gidTableLength: p.table,
          gids,
          netdev,
          activeMtu: fromDevinfo ?? fromNetdev,
          activeMtuSource: fromDevinfo !== undefined ? "ibv_devinfo" : fromNetdev !== null ? "netdev" : null,
          counters: p.counters.size ? Object.fromEntries([...p.counters].sort(([a], [b]) => (a < b ? -1 : 1))) : null,
          hwCounters: p.hw.size ? Object.fromEntries([...p.hw].sort(([a], [b]) => (a < b ? -1 : 1))) : null,
        };
      });
    out.push({
      name,
      pciAddress: d.files.get("pci") ?? null,
      nodeType: d.files.get("node_type") ?? null,
      nodeGuid: d.files.get("node_guid") ?? null,
      fwVer: d.files.get("fw_ver") ?? null,
      netdevs: d.netdevs,
      ports,
    });
  }
  return { present, devices: out, ibvDevinfo };
}

// ---------- a configured port: is it usable, and which GID does it use ----------

/** One configured HCA port (`rdma.hcas` entry "mlx5_0:1") and the GID index the engine is told to use. */
export type RdmaPortRequest = {
  readonly hca: string;
  readonly port: number;
  readonly gidIndex: number | null;
};

/** The GID a port uses: the configured index, or the one UCX picks itself (`UCX_IB_GID_INDEX=auto`). */
export interface SelectedGid {
  readonly index: number;
  readonly gid: string;
  readonly type: GidType | null;
  readonly netdev: string | null;
  readonly ipv4: string | null;
  readonly source: "configured" | "auto";
}

const isLinkLocal = (g: RdmaGid) => g.gid.startsWith("fe80:");

/**
 * UCX's own choice when no index is configured (`uct_ib_device_select_gid`): RoCE v2 IPv4, RoCE v2 IPv6
 * (not link-local), RoCE v2 link-local, then the same for RoCE v1; zero GIDs are never candidates.
 */
export function autoGid(port: RdmaPortFacts): RdmaGid | null {
  const order: Array<(g: RdmaGid) => boolean> = [];
  for (const type of ["RoCE v2", "IB/RoCE v1"] as const) {
    order.push((g) => g.type === type && g.ipv4 !== null);
    order.push((g) => g.type === type && g.ipv4 === null && !isLinkLocal(g));
    order.push((g) => g.type === type && g.ipv4 === null && isLinkLocal(g));
  }
  for (const pick of order) {
    const g = port.gids.find(pick);
    if (g) return g;
  }
  return null;
}

/** The port's facts, or why a configured port cannot be found. */
export function findPort(inv: RdmaInventory, req: Pick<RdmaPortRequest, "hca" | "port">): RdmaPortFacts | string {
  if (!inv.present) return `HCA ${req.hca} port ${req.port}: the host has no /sys/class/infiniband (no RDMA driver loaded, or no HCA)`;
  const dev = inv.devices.find((d) => d.name === req.hca);
  if (!dev) return `HCA ${req.hca} port ${req.port}: there is no HCA ${req.hca} in /sys/class/infiniband (found: ${inv.devices.map((d) => d.name).join(", ") || "none"}); check rdma.hcas`;
  const port = dev.ports.find((p) => p.port === req.port);
  if (!port) return `HCA ${req.hca} port ${req.port}: ${req.hca} has no port ${req.port} (ports: ${dev.ports.map((p) => p.port).join(", ") || "none"}); check rdma.hcas`;
  return port;
}

function listGids(port: RdmaPortFacts): string {
  return port.gids.length ? port.gids.map((g) => `${g.index} (${g.ipv4 ?? g.gid}${g.type ? `, ${g.type}` : ""})`).join(", ") : "none";
}

/**
 * What stops a configured port from carrying RDMA traffic, each naming the HCA and port (the caller adds
 * the host): not there, not ACTIVE, a GID index outside the table or on an empty slot, or (RoCE) no GID
 * at all. Empty when the port is usable.
 */
export function rdmaPortProblems(inv: RdmaInventory, req: RdmaPortRequest): string[] {
  const port = findPort(inv, req);
  if (typeof port === "string") return [port];
  const where = `HCA ${req.hca} port ${req.port}`;
  const problems: string[] = [];
  if (port.stateName !== "ACTIVE") {
    problems.push(
      `${where} is ${port.state ?? "in an unreadable state"}${port.physState ? ` (phys_state ${port.physState})` : ""}, not 4: ACTIVE; ` +
        `RDMA traffic cannot use it: bring the port up (cable, ${port.netdev ? `netdev ${port.netdev.name}, ` : ""}subnet manager) before measuring`,
    );
  }
  if (req.gidIndex !== null) {
    const g = port.gids.find((x) => x.index === req.gidIndex);
    if (port.gidTableLength !== null && req.gidIndex >= port.gidTableLength) {
      problems.push(`${where} has no GID index ${req.gidIndex}: its GID table has ${port.gidTableLength} entries; set rdma.gidIndex to one of: ${listGids(port)}`);
    } else if (!g) {
      problems.push(`${where} has no GID at index ${req.gidIndex} (the slot is empty, the all-zero GID); set rdma.gidIndex to one of: ${listGids(port)}`);
    }
  } else if (port.linkLayer === "Ethernet" && autoGid(port) === null) {
    problems.push(`${where} is RoCE but has no usable GID (${listGids(port)}): its netdev${port.netdev ? ` ${port.netdev.name}` : ""} has no address`);
  }
  return problems;
}

/** The GID the port uses (configured, or UCX's choice on RoCE); null on InfiniBand without a configured index. */
export function selectGid(port: RdmaPortFacts, gidIndex: number | null): SelectedGid | null {
  const g = gidIndex !== null ? port.gids.find((x) => x.index === gidIndex) : port.linkLayer === "Ethernet" ? autoGid(port) : null;
  return g ? { index: g.index, gid: g.gid, type: g.type, netdev: g.netdev, ipv4: g.ipv4, source: gidIndex !== null ? "configured" : "auto" } : null;
}

/**
 * The discovery probe's RDMA sections: the inventory, and a problem (reported through `report`, which
 * names the host) for each configured port that cannot carry RDMA traffic. Null when the probe printed
 * no RDMA section, which is an error only when ports were asked for.
 */
export function readRdmaSections(
  sections: Readonly<Record<string, string>>,
  requests: ReadonlyArray<RdmaPortRequest>,
  report: (section: string, detail: string) => void,
): RdmaInventory | null {
  if (sections.rdma === undefined) {
    if (requests.length) report("rdma", "the probe printed no rdma section (its output was cut short); run discovery again");
    return null;
  }
  const inv = parseRdmaSysfs(sections.rdma, sections.rdma_devinfo);
  for (const req of requests) for (const p of rdmaPortProblems(inv, req)) report("rdma", p);
  return inv;
}
