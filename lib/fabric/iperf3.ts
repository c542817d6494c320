/**
 * iperf3 for a TCP edge: the server and client argv, and a parser for the client's recorded `-J` result.
 *
 * In iperf3's default (forward) mode the client sends and the server receives, so for a directed edge
 * source -> destination the server runs on the destination host, bound to its fabric address, and the
 * client on the source host, bound to its own fabric address so the kernel cannot pick another path's
 * source. `-1` makes the server exit after one test: nothing is left listening.
 *
 * The measurement is `end.sum_received.bits_per_second` (what arrived, not what was offered); the samples
 * are the per-interval sums, excluding `--omit` warm-up intervals; retransmits come from `end.sum_sent`
 * (Linux TCP only; null elsewhere).
 */
import { FabricError } from "./errors";

export interface Iperf3Settings {
  /** The destination's fabric address: the server binds it, the client connects to it. */
  readonly serverAddress: string;
  /** The source's fabric address: the client binds it. */
  readonly clientAddress: string;
  /** Server port (stack config `fabric.iperfPort`). */
  readonly port: number;
  /** Seconds of traffic (`fabric.durationS`). */
  readonly durationS: number;
  /** Parallel streams (`-P`); default 1. */
  readonly streams?: number;
}

export interface Iperf3Commands {
  readonly server: ReadonlyArray<string>;
  readonly client: ReadonlyArray<string>;
  readonly settings: Required<Iperf3Settings>;
}

/** Server and client argv for one directed TCP edge. */
export function iperf3Commands(s: Iperf3Settings): Iperf3Commands {
  const settings: Required<Iperf3Settings> = { ...s, streams: s.streams ?? 1 };
  const problems: string[] = [];
  const address = /^[0-9A-Za-z:.%_-]+$/;
  if (typeof settings.serverAddress !== "string" || !address.test(settings.serverAddress)) problems.push(`serverAddress ${JSON.stringify(settings.serverAddress)} (an address)`);
  if (typeof settings.clientAddress !== "string" || !address.test(settings.clientAddress)) problems.push(`clientAddress ${JSON.stringify(settings.clientAddress)} (an address)`);
  if (!(Number.isSafeInteger(settings.port) && settings.port >= 1 && settings.port <= 65535)) problems.push(`port ${JSON.stringify(settings.port)} (1-65535)`);
  if (!(Number.isSafeInteger(settings.durationS) && settings.durationS >= 1)) problems.push(`durationS ${JSON.stringify(settings.durationS)} (whole seconds, 1 or more)`);
  if (!(Number.isSafeInteger(settings.streams) && settings.streams >= 1 && settings.streams <= 128)) problems.push(`streams ${JSON.stringify(settings.streams)} (1-128)`);
  if (problems.length) throw new FabricError("NARWHAL_FABRIC_TOOL_SETTINGS", `iperf3 settings out of range: ${problems.join(", ")}`);
  return {
    server: ["iperf3", "-s", "-B", settings.serverAddress, "-p", String(settings.port), "-1"],
    client: [
      "iperf3", "-c", settings.serverAddress, "-B", settings.clientAddress, "-p", String(settings.port),
      "-t", String(settings.durationS), ...(settings.streams > 1 ? ["-P", String(settings.streams)] : []), "-J",
    ],
    settings,
  };
}

// ---------- the recorded result ----------

export interface Iperf3Interval {
  readonly start: number;
  readonly end: number;
  readonly seconds: number;
  readonly bytes: number;
  readonly gbps: number;
  /** Sender-side retransmits in this interval; null when iperf3 does not report them. */
  readonly retransmits: number | null;
  /** A `--omit` warm-up interval, not a sample. */
  readonly omitted: boolean;
}

export interface Iperf3Result {
  readonly version: string | null;
  readonly protocol: string | null;
  readonly streams: number | null;
  readonly durationS: number | null;
  /** `-R`: the server sent and the client received. */
  readonly reverse: boolean;
  readonly localHost: string | null;
  readonly localPort: number | null;
  readonly remoteHost: string | null;
  readonly remotePort: number | null;
  /** `end.sum_received.bits_per_second` / 1e9: the measurement. */
  readonly receivedGbps: number;
  readonly receivedBytes: number;
  /** `end.sum_sent.bits_per_second` / 1e9. */
  readonly sentGbps: number | null;
  /** `end.sum_sent.retransmits`; null when not reported. */
  readonly retransmits: number | null;
  readonly intervals: ReadonlyArray<Iperf3Interval>;
  /** Per-interval Gbit/s of the intervals that are not omitted: the samples. */
  readonly samplesGbps: ReadonlyArray<number>;
  readonly cpu: { readonly hostTotal: number; readonly remoteTotal: number } | null;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | null => (v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : null);
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

function parseJson(text: string): Obj {
  const attempt = (t: string): Obj | null => {
    try {
      return obj(JSON.parse(t));
    } catch {
      return null;
    }
  };
  // Exactly the JSON document normally; tolerate a line of noise before or after it (a login banner).
  const whole = attempt(text) ?? attempt(text.slice(text.indexOf("{"), text.lastIndexOf("}") + 1));
  if (!whole) throw new FabricError("NARWHAL_FABRIC_TOOL_OUTPUT", `iperf3 -J output is not a JSON object: ${JSON.stringify(text.trim().slice(0, 200))}`);
  return whole;
}

/**
 * Parses the client's recorded `iperf3 -J` output. Throws `NARWHAL_FABRIC_TOOL_FAILED` with iperf3's own
 * message when it reported an error, and `NARWHAL_FABRIC_TOOL_OUTPUT` when the result is incomplete.
 */
export function parseIperf3Json(text: string): Iperf3Result {
  const doc = parseJson(text);
  const error = str(doc.error);
  if (error !== null) throw new FabricError("NARWHAL_FABRIC_TOOL_FAILED", `iperf3 failed: ${error}`);
  const start = obj(doc.start) ?? {};
  const end = obj(doc.end);
  const received = obj(end?.sum_received);
  const receivedBps = num(received?.bits_per_second);
  const receivedBytes = num(received?.bytes);
  if (!end || !received || receivedBps === null || receivedBytes === null) {
    throw new FabricError("NARWHAL_FABRIC_TOOL_OUTPUT", "iperf3 -J output has no end.sum_received (an interrupted run, or a UDP test): nothing was measured");
  }
  const sent = obj(end.sum_sent);
  const sentBps = num(sent?.bits_per_second);
  const testStart = obj(start.test_start) ?? {};
  const connected = Array.isArray(start.connected) ? obj(start.connected[0]) : null;
  const rawIntervals = Array.isArray(doc.intervals) ? doc.intervals : [];
  const intervals: Iperf3Interval[] = [];
  for (const [i, raw] of rawIntervals.entries()) {
    const sum = obj(obj(raw)?.sum);
    const bps = num(sum?.bits_per_second);
    const s = num(sum?.start);
    const e = num(sum?.end);
    if (!sum || bps === null || s === null || e === null) throw new FabricError("NARWHAL_FABRIC_TOOL_OUTPUT", `iperf3 -J interval ${i} has no sum with start, end and bits_per_second`);
    intervals.push({
      start: s,
      end: e,
      seconds: num(sum.seconds) ?? e - s,
      bytes: num(sum.bytes) ?? 0,
      gbps: bps / 1e9,
      retransmits: num(sum.retransmits),
      omitted: sum.omitted === true,
    });
  }
  const cpu = obj(end.cpu_utilization_percent);
  const hostTotal = num(cpu?.host_total);
  const remoteTotal = num(cpu?.remote_total);
  return {
    version: str(start.version),
    protocol: str(testStart.protocol),
    streams: num(testStart.num_streams),
    durationS: num(testStart.duration),
    reverse: testStart.reverse === 1 || testStart.reverse === true,
    localHost: str(connected?.local_host),
    localPort: num(connected?.local_port),
    remoteHost: str(connected?.remote_host),
    remotePort: num(connected?.remote_port),
    receivedGbps: receivedBps / 1e9,
    receivedBytes,
    sentGbps: sentBps === null ? null : sentBps / 1e9,
    retransmits: num(sent?.retransmits),
    intervals,
    samplesGbps: intervals.filter((x) => !x.omitted).map((x) => x.gbps),
    cpu: hostTotal !== null && remoteTotal !== null ? { hostTotal, remoteTotal } : null,
  };
}

/** The measurement a verdict reads: received Gbit/s and its samples. */
export function iperf3Measurement(r: Iperf3Result): { gbps: number; samples: ReadonlyArray<number> } {
  return { gbps: r.receivedGbps, samples: r.samplesGbps };
}
