/**
 * perftest's `ib_write_bw` for an RDMA edge: the server and client argv, and a parser for the client's
 * recorded report.
 *
 * RDMA WRITE moves data from the client into the server's memory, so for a directed edge
 * source -> destination the server runs on the destination host and the client on the source host. The
 * client reaches the server's TCP side channel (`-p`, default 18515) on the destination's fabric address
 * to exchange queue-pair data; the traffic itself uses the named HCA port and GID index on each side.
 *
 * Units, as perftest computes them (`print_report_bw`): `MiB/sec` (`MB/sec` before perftest 6) is 2^20
 * bytes per second; with `--report_gbits` the table says `Gb/sec`, which is 10^9 bits per second.
 *
 * A GID index goes to `-x` on each side. Without one, a RoCE port still needs a GID (perftest would pick
 * one itself); the caller passes the index UCX would pick, so the figure is taken on the GID the engines
 * use. InfiniBand without an index runs without a GRH, as UCX does.
 */
import { FabricError } from "./errors";
import type { RdmaPort } from "./fingerprint";

export interface IbWriteBwSettings {
  /** The server's HCA port (on the destination host). */
  readonly server: Pick<RdmaPort, "hca" | "port" | "gidIndex">;
  /** The client's HCA port (on the source host). */
  readonly client: Pick<RdmaPort, "hca" | "port" | "gidIndex">;
  /** The destination's fabric address, where the client finds the server's side channel. */
  readonly serverAddress: string;
  /** Message size in bytes (`-s`; perftest's default 65536). */
  readonly size: number;
  /** Iterations (`-n`; perftest's minimum is 5). */
  readonly iterations: number;
  /** perftest's TCP side-channel port (`-p`); default 18515. */
  readonly tcpPort?: number;
  /** Report Gbit/s (`--report_gbits`); default true. */
  readonly reportGbits?: boolean;
}

export interface IbWriteBwCommands {
  /** Run first, on the destination host; it waits for one client and exits. */
  readonly server: ReadonlyArray<string>;
  /** Run on the source host once the server listens. */
  readonly client: ReadonlyArray<string>;
  /** The settings with defaults applied: part of what the measurement was taken against. */
  readonly settings: Required<IbWriteBwSettings>;
}

export const IB_WRITE_BW_DEFAULT_TCP_PORT = 18515;
/** perftest's defaults for a bandwidth test: `-s 65536`, `-n 5000` (DEF_SIZE_BW, DEF_ITERS_WB). */
export const IB_WRITE_BW_DEFAULT_SIZE = 65536;
export const IB_WRITE_BW_DEFAULT_ITERATIONS = 5000;
/** `-x` accepts 0..MAX_GID_IX (64). */
export const IB_WRITE_BW_MAX_GID_INDEX = 64;

function portArgs(p: Pick<RdmaPort, "hca" | "port" | "gidIndex">): string[] {
  return ["-d", p.hca, "-i", String(p.port), ...(p.gidIndex === null ? [] : ["-x", String(p.gidIndex)])];
}

/** Server and client argv for one directed RDMA edge. */
export function ibWriteBwCommands(s: IbWriteBwSettings): IbWriteBwCommands {
  const settings: Required<IbWriteBwSettings> = {
    server: { hca: s.server?.hca, port: s.server?.port, gidIndex: s.server?.gidIndex },
    client: { hca: s.client?.hca, port: s.client?.port, gidIndex: s.client?.gidIndex },
    serverAddress: s.serverAddress,
    size: s.size,
    iterations: s.iterations,
    tcpPort: s.tcpPort ?? IB_WRITE_BW_DEFAULT_TCP_PORT,
    reportGbits: s.reportGbits ?? true,
  };
  const problems: string[] = [];
  for (const side of ["server", "client"] as const) {
    const p = settings[side];
    if (typeof p.hca !== "string" || !/^[A-Za-z0-9_.-]+$/.test(p.hca)) problems.push(`${side}.hca ${JSON.stringify(p.hca)} (an HCA name such as mlx5_0)`);
    if (!(Number.isSafeInteger(p.port) && p.port >= 1)) problems.push(`${side}.port ${JSON.stringify(p.port)} (1 or more)`);
    if (p.gidIndex !== null && !(Number.isSafeInteger(p.gidIndex) && p.gidIndex >= 0 && p.gidIndex <= IB_WRITE_BW_MAX_GID_INDEX)) {
      problems.push(`${side}.gidIndex ${JSON.stringify(p.gidIndex)} (0-${IB_WRITE_BW_MAX_GID_INDEX}, what ib_write_bw's -x accepts)`);
    }
  }
  if (typeof settings.serverAddress !== "string" || !/^[0-9A-Za-z:.%_-]+$/.test(settings.serverAddress)) {
    problems.push(`serverAddress ${JSON.stringify(settings.serverAddress)} (an address or host name)`);
  }
  if (!(Number.isSafeInteger(settings.size) && settings.size >= 1)) problems.push(`size ${JSON.stringify(settings.size)} (bytes, 1 or more)`);
  if (!(Number.isSafeInteger(settings.iterations) && settings.iterations >= 5)) problems.push(`iterations ${JSON.stringify(settings.iterations)} (5 or more)`);
  if (!(Number.isSafeInteger(settings.tcpPort) && settings.tcpPort >= 1 && settings.tcpPort <= 65535)) problems.push(`tcpPort ${JSON.stringify(settings.tcpPort)} (1-65535)`);
  if (problems.length) throw new FabricError("NARWHAL_FABRIC_TOOL_SETTINGS", `ib_write_bw settings out of range: ${problems.join(", ")}`);

  // -F: do not abort when the CPU frequency governor is not "performance" (the warning stays in the log).
  const common = (p: Pick<RdmaPort, "hca" | "port" | "gidIndex">) => [
    "ib_write_bw",
    ...portArgs(p),
    "-s", String(settings.size),
    "-n", String(settings.iterations),
    "-p", String(settings.tcpPort),
    "-F",
    ...(settings.reportGbits ? ["--report_gbits"] : []),
  ];
  return { server: common(settings.server), client: [...common(settings.client), settings.serverAddress], settings };
}

// ---------- the recorded report ----------

export interface IbWriteBwRow {
  readonly bytes: number;
  readonly iterations: number;
  /** As printed, in {@link IbWriteBwReport.unit}. */
  readonly peak: number;
  readonly average: number;
  readonly msgRateMpps: number;
  /** Converted to 10^9 bits per second. */
  readonly peakGbps: number;
  readonly averageGbps: number;
}

export interface IbWriteBwReport {
  /** The table's unit: `MiB/sec` or, before perftest 6, `MB/sec` (both 2^20 B/s), or `Gb/sec` (10^9 bit/s, `--report_gbits`). */
  readonly unit: "MiB/sec" | "MB/sec" | "Gb/sec";
  /** One row per message size (several with `-a`), in printed order. */
  readonly rows: ReadonlyArray<IbWriteBwRow>;
  /** The last row's average in Gbit/s: the measurement (a single `-s` run prints one row). */
  readonly averageGbps: number;
  /** Banner facts, null when not printed. */
  readonly device: string | null;
  readonly transportType: string | null;
  readonly connectionType: string | null;
  readonly linkType: string | null;
  readonly mtu: number | null;
  readonly gidIndex: number | null;
  readonly qps: number | null;
  /** The GIDs printed under the local and remote address lines (perftest prints each byte in decimal). */
  readonly localGid: string | null;
  readonly remoteGid: string | null;
}

/** Bytes per second of one unit: perftest's `format_factor` (0x100000 for MiB/sec, 125000000 for Gb/sec). */
const BYTES_PER_UNIT = { "MiB/sec": 0x100000, "MB/sec": 0x100000, "Gb/sec": 125_000_000 } as const;

function toGbps(value: number, unit: IbWriteBwReport["unit"]): number {
  return unit === "Gb/sec" ? value : (value * BYTES_PER_UNIT[unit] * 8) / 1e9;
}

function bannerValue(text: string, label: string): string | null {
  // Banner lines look like " Device         : mlx5_0" and may hold two fields separated by tabs.
  const re = new RegExp(`(?:^|\\t)\\s*${label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s*:\\s*([^\\t\\n]+?)\\s*(?=\\t|$)`, "m");
  return re.exec(text)?.[1] ?? null;
}

function gidAfter(text: string, which: "local" | "remote"): string | null {
  const m = new RegExp(`^\\s*${which} address:.*\\n\\s*GID:\\s*([0-9:]+)\\s*$`, "m").exec(text);
  return m?.[1] ?? null;
}

const HEADER = /^\s*#bytes\s+#iterations\s+BW peak\[(MiB\/sec|MB\/sec|Gb\/sec)\]\s+BW average\[(?:MiB\/sec|MB\/sec|Gb\/sec)\]\s+MsgRate\[Mpps\]/m;
const NUMBER = String.raw`(\d+(?:\.\d+)?)`;
/** A result row; `--cpu_util` appends one more column, which is not kept. */
const ROW = new RegExp(String.raw`^\s*(\d+)\s+(\d+)\s+${NUMBER}\s+${NUMBER}\s+${NUMBER}(?:\s+${NUMBER})?\s*$`);

/**
 * Parses the client's recorded `ib_write_bw` output. Throws `NARWHAL_FABRIC_TOOL_OUTPUT` when the result
 * table is missing (the server side prints none; a failed run stops before it) or has no rows.
 */
export function parseIbWriteBw(text: string): IbWriteBwReport {
  const header = HEADER.exec(text);
  if (!header) {
    const last = text.trim().split("\n").slice(-3).join(" | ");
    throw new FabricError("NARWHAL_FABRIC_TOOL_OUTPUT", `ib_write_bw printed no result table (is this the client's output?); it ended with: ${JSON.stringify(last.slice(0, 300))}`);
  }
  const unit = header[1] as IbWriteBwReport["unit"];
  const rows: IbWriteBwRow[] = [];
  for (const line of text.slice(header.index + header[0].length).split("\n").slice(1)) {
    if (/^\s*-{10,}\s*$/.test(line)) break;
    if (line.trim() === "") continue;
    const m = ROW.exec(line);
    if (!m) continue; // warnings perftest interleaves (e.g. CPU frequency) are not rows
    const [bytes, iterations, peak, average, msgRate] = m.slice(1, 6).map(Number) as [number, number, number, number, number];
    rows.push({ bytes, iterations, peak, average, msgRateMpps: msgRate, peakGbps: toGbps(peak, unit), averageGbps: toGbps(average, unit) });
  }
  if (rows.length === 0) throw new FabricError("NARWHAL_FABRIC_TOOL_OUTPUT", "ib_write_bw printed its result header but no result row");
  const num = (v: string | null) => {
    const m = v === null ? null : /^(\d+)/.exec(v);
    return m ? Number(m[1]) : null;
  };
  return {
    unit,
    rows,
    averageGbps: rows[rows.length - 1].averageGbps,
    device: bannerValue(text, "Device"),
    transportType: bannerValue(text, "Transport type"),
    connectionType: bannerValue(text, "Connection type"),
    linkType: bannerValue(text, "Link type"),
    mtu: num(bannerValue(text, "Mtu")),
    gidIndex: num(bannerValue(text, "GID index")),
    qps: num(bannerValue(text, "Number of qps")),
    localGid: gidAfter(text, "local"),
    remoteGid: gidAfter(text, "remote"),
  };
}

/** The measurement a verdict reads: the last row's average Gbit/s; its samples are that row's iterations. */
export function ibWriteBwMeasurement(r: IbWriteBwReport): { gbps: number; samples: number } {
  const last = r.rows[r.rows.length - 1];
  return { gbps: last.averageGbps, samples: last.iterations };
}
