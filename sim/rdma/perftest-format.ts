/**
 * What perftest's `ib_write_bw` prints, byte for byte, from its format strings (perftest 6.29:
 * src/perftest_parameters.{h,c} `ctx_print_test_info`, `print_full_bw_report`, src/perftest_communication
 * `ctx_print_pingpong_data`, src/write_bw.c; reference rdma-facts §2.2). C's printf conversions are
 * spelled out here: `%-7lu` pads right to 7, `%-7.2lf` is two decimals padded right to 7, `%#06x` is
 * "0x" and zero-padded hex to 6 characters except that 0 prints as zeros only.
 */

/** RESULT_LINE: 87 dashes. */
export const RESULT_LINE = `${"-".repeat(87)}\n`;

/** The server's banner, printed once its port checks pass and before it waits for the client. */
export const SERVER_BANNER = "\n************************************\n* Waiting for client to connect... *\n************************************\n";

/** `%#0<width>x` (and `%#0<width>llx`). */
export function cHex(n: number | bigint, width: number): string {
  const v = BigInt(n);
  if (v === 0n) return "0".repeat(width);
  const hex = v.toString(16);
  return `0x${hex.padStart(width - 2, "0")}`;
}

const left = (s: string, width: number) => s.padEnd(width);

export interface TestInfo {
  readonly device: string;
  readonly qps: number;
  /** `IB` for InfiniBand and RoCE alike (transport_str). */
  readonly transportType: "IB";
  readonly client: boolean;
  readonly txDepth: number;
  readonly cqMod: number;
  /** Bytes: 128 << the negotiated MTU enum. */
  readonly mtu: number;
  /** link_layer_str: "IB" or "Ethernet". */
  readonly linkType: "IB" | "Ethernet";
  /** Printed only when a GID is used (not -1). */
  readonly gidIndex: number | null;
  readonly maxInline: number;
  /** Printed when the HCA's NUMA node is known. */
  readonly numaNode: number | null;
}

/** `ctx_print_test_info` for an RC RDMA WRITE bandwidth test. */
export function testInfo(t: TestInfo): string {
  return [
    RESULT_LINE,
    "                    RDMA_Write BW Test\n",
    ` Dual-port       : OFF\t\tDevice         : ${t.device}\n`,
    ` Number of qps   : ${t.qps}\t\tTransport type : ${t.transportType}\n`,
    " Connection type : RC\t\tUsing SRQ      : OFF\n",
    " PCIe relax order: ON\t\tLock-free      : OFF\n",
    " ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF\n",
    t.client ? ` TX depth        : ${t.txDepth}\n` : "",
    ` CQ Moderation   : ${t.cqMod}\n`,
    " CQE Poll Batch  : Dynamic\n",
    ` Mtu             : ${t.mtu}[B]\n`,
    ` Link type       : ${t.linkType}\n`,
    t.gidIndex !== null ? ` GID index       : ${t.gidIndex}\n` : "",
    ` Max inline data : ${t.maxInline}[B]\n`,
    " rdma_cm QPs\t : OFF\n",
    " Data ex. method : Ethernet\n",
    t.numaNode !== null ? ` NUMA node       : ${t.numaNode}\n` : "",
    RESULT_LINE,
  ].join("");
}

/** One side's queue pair as `ctx_print_pingpong_data` prints it for WRITE. */
export interface Dest {
  readonly lid: number;
  readonly qpn: number;
  readonly psn: number;
  readonly rkey: number;
  readonly vaddr: bigint;
  /** 16 bytes, or null when no GID is used (InfiniBand without -x). */
  readonly gid: ReadonlyArray<number> | null;
}

/** ` local address: LID 0000 QPN 0x00c7 PSN 0x3a91f2 RKey 0x1fe9d4 VAddr 0x007f3c8a000000` and its ` GID: …` line (bytes in decimal, `%02d`). */
export function addressLines(side: "local" | "remote", d: Dest): string {
  const line = ` ${side} address: LID ${cHex(d.lid, 4)} QPN ${cHex(d.qpn, 6)} PSN ${cHex(d.psn, 6)} RKey ${cHex(d.rkey, 8)} VAddr ${cHex(d.vaddr, 16)}\n`;
  return d.gid === null ? line : `${line} GID: ${d.gid.map((b) => String(b).padStart(2, "0")).join(":")}\n`;
}

/** RESULT_LINE, then RESULT_FMT_G or RESULT_FMT (current perftest says MiB/sec), then RESULT_EXT. */
export function tableHeader(gbits: boolean): string {
  const unit = gbits ? "Gb/sec" : "MiB/sec";
  return `${RESULT_LINE} #bytes     #iterations    BW peak[${unit}]    BW average[${unit}]   MsgRate[Mpps]\n`;
}

export interface BwReport {
  readonly size: number;
  readonly iters: number;
  /** In the table's unit. */
  readonly peak: number;
  readonly average: number;
  readonly msgRateMpps: number;
}

/**
 * REPORT_FMT (`" %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t     %-7.6lf"`), or REPORT_FMT_EXT
 * (six decimals) when the average is below 0.1 Gb/s, then REPORT_EXT.
 */
export function reportRow(r: BwReport, gbits: boolean): string {
  if (gbits && r.average < 0.1) {
    return ` ${left(String(r.size), 7)}    ${r.iters}           ${left(r.peak.toFixed(6), 7)}            ${left(r.average.toFixed(6), 7)}            ${left(r.msgRateMpps.toFixed(6), 7)}\n`;
  }
  return ` ${left(String(r.size), 7)}    ${left(String(r.iters), 10)}       ${left(r.peak.toFixed(2), 7)}            ${left(r.average.toFixed(2), 7)}\t\t     ${left(r.msgRateMpps.toFixed(6), 7)}\n`;
}

/** `--out_json`: the results object as `write_bw_report_to_file` writes it (REPORT_FMT_JSON). */
export function reportJson(r: BwReport, info: TestInfo): string {
  return [
    "{\n",
    '"test_info": {\n',
    '"test": "RDMA_Write_BW_Test",\n',
    `"Dual_port": "OFF",\n"Device": "${info.device}",\n`,
    `"Number_of_qps": ${info.qps},\n"Transport_type": "${info.transportType}",\n`,
    '"Connection_type": "RC",\n"Using_SRQ": "OFF",\n',
    '"PCIe_relax_order": "ON",\n',
    '"ibv_wr_API": "ON",\n',
    info.client ? `"TX_depth": ${info.txDepth},\n` : "",
    `"CQ_Moderation": ${info.cqMod},\n`,
    `"Mtu": ${info.mtu},\n`,
    `"Link_type": "${info.linkType}",\n`,
    info.gidIndex !== null ? `"GID_index": ${info.gidIndex},\n` : "",
    `"Max_inline_data": ${info.maxInline},\n`,
    '"rdma_cm_QPs": "OFF",\n',
    '"Use_ROCm_memory": "OFF",\n"Use_MUSA_memory": "OFF",\n',
    '"Data_ex_method": "Ethernet"',
    "\n},\n",
    '"results": {\n',
    `"MsgSize": ${r.size},\n"n_iterations": ${r.iters},\n"BW_peak": ${r.peak.toFixed(2)},\n"BW_average": ${r.average.toFixed(2)},\n"MsgRate": ${r.msgRateMpps.toFixed(6)}`,
    "\n}\n",
    "}\n",
  ].join("");
}
