/**
 * A simulated host's RDMA HCA as Linux shows it under /sys/class/infiniband: one mlx5 RoCE function on
 * the host's fabric interface, written as plain files (the harness, at build time) and read and advanced
 * by the `ib_write_bw` stand-in inside the host (its counters).
 *
 * Layout (paths inside the host; the kernel's formats, reference rdma-facts §1):
 *   /sys/bus/pci/devices/0000:17:00.0/                 the HCA's PCI function (Mellanox 0x15b3, Ethernet class)
 *     net/fab0 -> /sys/class/net/fab0                  its netdev
 *     infiniband/mlx5_0/{node_type,node_guid,fw_ver,…,device -> ../../../0000:17:00.0}
 *       ports/1/{state,phys_state,link_layer,rate,lid,…}
 *       ports/1/gids/0..254, gid_attrs/{types,ndevs}/<i> (only for the non-empty entries)
 *       ports/1/counters/*, ports/1/hw_counters/*
 *     infiniband_verbs/uverbs0/{ibdev,dev,abi_version}
 *   /sys/class/infiniband/mlx5_0 -> ../../bus/pci/devices/0000:17:00.0/infiniband/mlx5_0
 *   /sys/class/infiniband_verbs/uverbs0 -> ../../bus/pci/devices/0000:17:00.0/infiniband_verbs/uverbs0
 *
 * What plain files cannot do, and the choice made (sim/hosts/README.md): reading `gid_attrs/types/<i>`
 * or `ndevs/<i>` of an empty GID slot fails with EINVAL on Linux; here those files do not exist (ENOENT).
 * Both are a failed read to every reader.
 */
import * as fs from "node:fs";
import * as path from "node:path";

/** The HCA's PCI function in the host's fake PCI tree. */
export const HCA_PCI_ADDRESS = "0000:17:00.0";
/** mlx5 reports a 255-entry GID table on ConnectX-6 Dx (uncertain per device; rdma-facts §7). */
export const GID_TABLE_LENGTH = 255;
/** 200GAUI-4 as mlx5 reports it (rdma-facts §1.2). */
export const PORT_RATE = "200 Gb/sec (4X HDR)";
export const PORT_RATE_GBPS = 200;

/** PortCounters (extended set) and the mlx5 driver counters the simulated HCA exposes. */
export const PORT_COUNTERS = [
  "VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery", "local_link_integrity_errors",
  "multicast_rcv_packets", "multicast_xmit_packets", "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors",
  "port_rcv_packets", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_constraint_errors",
  "port_xmit_data", "port_xmit_discards", "port_xmit_packets", "port_xmit_wait", "symbol_error", "unicast_rcv_packets",
  "unicast_xmit_packets",
] as const;
export const HW_COUNTERS = [
  // basic
  "rx_write_requests", "rx_read_requests", "rx_atomic_requests", "rx_dct_connect", "out_of_buffer",
  // out_of_seq_cnt
  "out_of_sequence",
  // retransmission_q_counters
  "duplicate_request", "rnr_nak_retry_err", "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err",
  // enhanced_error_q_counters
  "resp_local_length_error", "resp_cqe_error", "req_cqe_error", "req_remote_invalid_request", "req_remote_access_errors",
  "resp_remote_access_errors", "resp_cqe_flush_error", "req_cqe_flush_error", "req_transport_retries_exceeded", "req_rnr_retries_exceeded",
  // cc_query_allowed
  "rp_cnp_ignored", "rp_cnp_handled", "np_ecn_marked_roce_packets", "np_cnp_sent",
  // PCAM
  "rx_icrc_encapsulated",
] as const;

/** `%pI6`: eight four-digit groups, never compressed. */
export function gidText(bytes: ReadonlyArray<number>): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] << 8) | bytes[i + 1]).toString(16).padStart(4, "0"));
  return groups.join(":");
}

/** The IPv4-mapped GID of an address: ::ffff:a.b.c.d. */
export function ipv4Gid(address: string): number[] {
  return [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...address.split(".").map(Number)];
}

/** The default (link-local) RoCE GID mlx5 derives from the netdev's MAC: fe80::<EUI-64>. */
export function macGid(mac: string): number[] {
  const m = mac.split(":").map((x) => parseInt(x, 16));
  return [0xfe, 0x80, 0, 0, 0, 0, 0, 0, m[0] ^ 0x02, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]];
}

export interface HcaSpec {
  /** The host alias (node_desc). */
  readonly alias: string;
  /** mlx5_0 */
  readonly name: string;
  /** The netdev the RoCE port runs on (the host's fabric interface) and its MAC. */
  readonly netdev: string;
  readonly mac: string;
  /** IPv4 addresses on the netdev, in the order they were added. */
  readonly addresses: ReadonlyArray<string>;
}

/** GID table entries as mlx5 fills it for one port: link-local v1/v2, then v1/v2 per IPv4 address (so the first address's RoCE v2 GID is index 3). */
export function gidEntries(hca: HcaSpec): Array<{ index: number; gid: string; type: "IB/RoCE v1" | "RoCE v2" }> {
  const out: Array<{ index: number; gid: string; type: "IB/RoCE v1" | "RoCE v2" }> = [];
  const add = (bytes: number[]) => {
    out.push({ index: out.length, gid: gidText(bytes), type: "IB/RoCE v1" });
    out.push({ index: out.length, gid: gidText(bytes), type: "RoCE v2" });
  };
  add(macGid(hca.mac));
  for (const a of hca.addresses) add(ipv4Gid(a));
  return out;
}

const hex4 = (n: number) => n.toString(16).padStart(4, "0");

/** node_guid as mlx5 derives it from the MAC (the facts' sample: 0c:42:a1:12:34:56 → 0c42:a103:0012:3456). */
export function nodeGuid(mac: string): string {
  const m = mac.split(":").map((x) => parseInt(x, 16));
  return [hex4((m[0] << 8) | m[1]), hex4((m[2] << 8) | 0x03), hex4(m[3]), hex4((m[4] << 8) | m[5])].join(":");
}

function write(file: string, text: string, mode = 0o444): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.rmSync(file, { force: true });
  fs.writeFileSync(file, `${text}\n`, { mode });
}

/** Port 1's GID table and its attributes, replacing what was there (counters and state are kept). */
export function writeGidTable(portDir: string, hca: HcaSpec): void {
  for (const d of ["gids", "gid_attrs/types", "gid_attrs/ndevs"]) fs.rmSync(path.join(portDir, d), { recursive: true, force: true });
  const entries = gidEntries(hca);
  for (let i = 0; i < GID_TABLE_LENGTH; i++) {
    const e = entries[i];
    write(path.join(portDir, "gids", String(i)), e ? e.gid : "0000:0000:0000:0000:0000:0000:0000:0000");
    // An empty slot's type and netdev fail to read (EINVAL) on Linux: here they are absent.
    if (e) {
      write(path.join(portDir, "gid_attrs", "types", String(i)), e.type);
      write(path.join(portDir, "gid_attrs", "ndevs", String(i)), hca.netdev);
    }
  }
}

/**
 * Writes the HCA under `pciDir` (the host's fake /sys/bus/pci/devices) and its class links under
 * `classDir` (the host's /sys/class additions: infiniband/, infiniband_verbs/).
 */
export function writeHcaTree(pciDir: string, classDir: string, hca: HcaSpec, uverbs: number): void {
  const fn = path.join(pciDir, HCA_PCI_ADDRESS);
  fs.rmSync(path.join(fn, "infiniband"), { recursive: true, force: true });
  fs.rmSync(path.join(fn, "infiniband_verbs"), { recursive: true, force: true });
  fs.rmSync(path.join(fn, "net"), { recursive: true, force: true });
  fs.mkdirSync(path.join(fn, "net"), { recursive: true });
  fs.symlinkSync(`/sys/class/net/${hca.netdev}`, path.join(fn, "net", hca.netdev));

  const dev = path.join(fn, "infiniband", hca.name);
  write(path.join(dev, "node_type"), "1: CA");
  write(path.join(dev, "node_guid"), nodeGuid(hca.mac));
  write(path.join(dev, "sys_image_guid"), nodeGuid(hca.mac));
  write(path.join(dev, "fw_ver"), "22.39.1002");
  write(path.join(dev, "node_desc"), `${hca.alias} ${hca.name}`);
  write(path.join(dev, "hca_type"), "MT4125");
  write(path.join(dev, "hw_rev"), "0x0");
  write(path.join(dev, "board_id"), "MT_0000000359");
  fs.symlinkSync(`../../../${HCA_PCI_ADDRESS}`, path.join(dev, "device"));

  const port = path.join(dev, "ports", "1");
  write(path.join(port, "state"), "4: ACTIVE");
  write(path.join(port, "phys_state"), "5: LinkUp");
  write(path.join(port, "link_layer"), "Ethernet");
  write(path.join(port, "rate"), PORT_RATE);
  write(path.join(port, "lid"), "0x0");
  write(path.join(port, "sm_lid"), "0x0");
  write(path.join(port, "lid_mask_count"), "0");
  write(path.join(port, "sm_sl"), "0");
  write(path.join(port, "cap_mask"), "0x04010000");
  writeGidTable(port, hca);
  for (const c of PORT_COUNTERS) write(path.join(port, "counters", c), "0");
  for (const c of HW_COUNTERS) write(path.join(port, "hw_counters", c), "0");
  write(path.join(port, "hw_counters", "lifespan"), "10", 0o644);

  const verbs = path.join(fn, "infiniband_verbs", `uverbs${uverbs}`);
  write(path.join(verbs, "ibdev"), hca.name);
  write(path.join(verbs, "dev"), `231:${192 + uverbs}`);
  write(path.join(verbs, "abi_version"), "1");

  for (const [cls, name, target] of [
    ["infiniband", hca.name, `../../bus/pci/devices/${HCA_PCI_ADDRESS}/infiniband/${hca.name}`],
    ["infiniband_verbs", `uverbs${uverbs}`, `../../bus/pci/devices/${HCA_PCI_ADDRESS}/infiniband_verbs/uverbs${uverbs}`],
  ] as const) {
    fs.mkdirSync(path.join(classDir, cls), { recursive: true });
    fs.rmSync(path.join(classDir, cls, name), { force: true });
    fs.symlinkSync(target, path.join(classDir, cls, name));
  }
  write(path.join(classDir, "infiniband_verbs", "abi_version"), "6");
}

// ---------- inside the host: the stand-in's view ----------

export const SYSFS_IB = "/sys/class/infiniband";

/** `state` as mlx5 writes it, by what a test asks for. */
export const PORT_STATES = {
  active: { state: "4: ACTIVE", physState: "5: LinkUp" },
  down: { state: "1: DOWN", physState: "3: Disabled" },
} as const;

/** Adds to counters in one port's `counters/` or `hw_counters/` (decimal text, as sysfs prints them). */
export function addCounters(dir: string, add: Readonly<Record<string, number | bigint>>): void {
  for (const [name, n] of Object.entries(add)) {
    if (n === 0 || n === 0n) continue;
    const file = path.join(dir, name);
    let before: bigint;
    try {
      before = BigInt(fs.readFileSync(file, "utf8").trim());
    } catch {
      continue; // a counter this HCA does not expose
    }
    try {
      fs.writeFileSync(file, `${before + BigInt(n)}\n`);
    } catch (err) {
      // Files the kernel would update for anyone: only root may write them here (sim/hosts/README.md).
      if ((err as NodeJS.ErrnoException).code !== "EACCES" && (err as NodeJS.ErrnoException).code !== "EPERM") throw err;
    }
  }
}
