/**
 * `ib_write_bw` on a simulated host: a stand-in for perftest's RDMA WRITE bandwidth test (6.29), run
 * by the `ib_write_bw` shim on hosts with an HCA (sim/hosts/shims.ts). Real libibverbs cannot be fooled
 * by files (rdma-facts §1.7), so this program plays the tool against the host's sysfs tree
 * (./sysfs.ts):
 *
 * - the same options (`-d -i -x -s -n -p -q -D -m -F --report_gbits --output --out_json
 *   --out_json_file -V -h`), checked with perftest's messages; the server listens on TCP `-p` (18515)
 *   and serves one client, which names it as its last argument;
 * - the port checks before the server's banner (` Port number 1 state is Down`, unknown device or port),
 *   the GID a side uses (`-x`, or perftest's best-scored one on RoCE), the MTU exchange (the smaller
 *   end's), the GID-family check, an empty GID slot failing the QP's move to RTR, and an index past the
 *   table failing `set_up_connection` after the TCP connect;
 * - the client really moves `-s` × `-n` bytes (or for `-D` seconds) to the server, as one TCP stream
 *   between the two GIDs' addresses to port 4791 (RoCE v2's UDP port; TCP here, for reliable
 *   delivery), so the figure is measured over the hosts' fabric interfaces and their `tc` shaping, and
 *   capped at the port's rate; a stream that stalls for QP_STALL_MS fails as an RC QP whose retries
 *   ran out (` Failed status-transport retry counter exceeded (12)`);
 * - both ends advance their port's counters afterwards: the sender's transmitted and the receiver's
 *   received data in 4-byte units, packets, ACKs the other way, and the TCP retransmissions the stream
 *   needed as the RoCE retransmission counters (sender `packet_seq_err`, receiver `out_of_sequence`);
 *   a failed test adds `local_ack_timeout_err` and `req_transport_retries_exceeded` on the sender;
 * - the output of ./perftest-format.ts, on stdout, with the errors on stderr and exit status 1.
 *
 * The exchange between the two stand-ins is newline-delimited JSON on the `-p` connection, not
 * perftest's wire format: only stand-ins talk to each other.
 */
import { randomInt } from "node:crypto";
import * as dns from "node:dns/promises";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { addCounters, PORT_RATE_GBPS, SYSFS_IB } from "./sysfs";
import { addressLines, RESULT_LINE, reportJson, reportRow, SERVER_BANNER, tableHeader, testInfo, type BwReport, type Dest, type TestInfo } from "./perftest-format";

const VERSION = "6.29";
/** perftest's portStates[], by `state` code. */
const PORT_STATE_NAMES = ["Nop", "Down", "Init", "Armed", "", "Active Defer"];
/**
 * How long the data stream may make no progress before the client reports an exhausted retry count.
 * An RC QP gives up after (retry count 7 + 1) × 4.096 µs × 2^14 ≈ 0.54 s; the stand-in's bytes share the
 * machine's CPUs with everything else, so it waits longer before calling a path broken.
 */
const QP_STALL_MS = 3000;
/** RoCE v2's UDP destination port, used here as the data stream's TCP port. */
const ROCE_V2_PORT = 4791;
/** Bytes on the wire per RoCE v2 packet besides its payload: Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4. */
const PACKET_OVERHEAD = 58;
/** RETH on the first packet of each RDMA WRITE; an ACK is a header and its 4-byte AETH. */
const RETH = 16;
const ACK_BYTES = PACKET_OVERHEAD + 4;

class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

const out = (s: string) => process.stdout.write(s);
function fail(...lines: string[]): never {
  process.stderr.write(lines.join(""));
  throw new Exit(1);
}

// ---------- options, as perftest's parser reads them ----------

interface Params {
  dev: string | null;
  ibPort: number;
  gidIndex: number | null;
  size: number;
  iters: number;
  tcpPort: number;
  qps: number;
  durationS: number | null;
  mtu: number | null;
  reportGbits: boolean;
  output: "full" | "bandwidth" | "message_rate";
  outJson: boolean;
  outJsonFile: string;
  server: string | null;
}

const SHORT: Record<string, string> = { d: "ib-dev", i: "ib-port", x: "gid-index", s: "size", n: "iters", p: "port", q: "qp", D: "duration", m: "mtu", F: "CPU-freq", V: "version", h: "help", a: "all", R: "rdma_cm" };
const WITH_VALUE = new Set(["ib-dev", "ib-port", "gid-index", "size", "iters", "port", "qp", "duration", "mtu", "output", "out_json_file"]);
const FLAGS = new Set(["CPU-freq", "version", "help", "all", "rdma_cm", "report_gbits", "out_json"]);

/** strtol(optarg, &end, 0) with perftest's "argument … should be <type>" when anything is left over. */
function integer(name: string, arg: string, type: string): number {
  const m = /^\s*([+-]?)(0x[0-9a-f]+|0[0-7]*|[1-9][0-9]*)/i.exec(arg);
  if (!m || m[0].length !== arg.length) fail(` ${name} argument ${arg} should be ${type}\n`, " Parser function exited with Error\n");
  const digits = m[2];
  const v = digits.toLowerCase().startsWith("0x") ? parseInt(digits.slice(2), 16) : digits.length > 1 && digits.startsWith("0") ? parseInt(digits, 8) : parseInt(digits, 10);
  return m[1] === "-" ? -v : v;
}

function parseArgs(argv: string[]): Params {
  const p: Params = {
    dev: null, ibPort: 1, gidIndex: null, size: 65536, iters: 5000, tcpPort: 18515, qps: 1, durationS: null, mtu: null,
    reportGbits: false, output: "full", outJson: false, outJsonFile: "perftest_out.json", server: null,
  };
  const positional: string[] = [];
  const parserError = (...lines: string[]): never => fail(...lines, " Parser function exited with Error\n");
  for (let k = 0; k < argv.length; k++) {
    const a = argv[k];
    let name: string;
    let value: string | undefined;
    if (a.startsWith("--") && a.length > 2) {
      const eq = a.indexOf("=");
      name = eq < 0 ? a.slice(2) : a.slice(2, eq);
      value = eq < 0 ? undefined : a.slice(eq + 1);
      if (!WITH_VALUE.has(name) && !FLAGS.has(name)) parserError(`ib_write_bw: unrecognized option '${a}'\n`);
      if (FLAGS.has(name) && value !== undefined) parserError(`ib_write_bw: option '--${name}' doesn't allow an argument\n`);
    } else if (a.startsWith("-") && a.length > 1) {
      const long = SHORT[a[1]];
      if (!long) parserError(`ib_write_bw: invalid option -- '${a[1]}'\n`);
      name = long;
      if (WITH_VALUE.has(name)) value = a.length > 2 ? a.slice(2) : undefined;
      else if (a.length > 2) parserError(`ib_write_bw: invalid option -- '${a[2]}'\n`);
    } else {
      positional.push(a);
      continue;
    }
    if (WITH_VALUE.has(name) && value === undefined) {
      value = argv[++k];
      if (value === undefined) parserError(`ib_write_bw: option requires an argument -- '${name}'\n`);
    }
    const v = value!;
    switch (name) {
      case "ib-dev": p.dev = v; break;
      case "ib-port":
        p.ibPort = integer("IB Port", v, "uint8_t") & 0xff;
        if (p.ibPort < 1) parserError("IB Port can't be less than 1\n");
        break;
      case "gid-index": {
        const x = integer("Gid index", v, "uint8_t") & 0xff; // the value is cast to uint8_t first
        if (x > 64) parserError(" Gid index should be between 0 and 64\n");
        p.gidIndex = x;
        break;
      }
      case "size": {
        const factor = /K$/.test(v) ? 1024 : /M$/.test(v) ? 1024 * 1024 : 1;
        const n = parseInt(factor === 1 ? v : v.slice(0, -1), 10) * factor;
        if (!(n >= 1 && n <= 2147483647)) parserError(" Message Size should be between 1 and 2147483647\n");
        p.size = n;
        break;
      }
      case "iters": {
        const n = integer("Iteration num", v, "uint64_t");
        if (n < 5 || n > 4294967296) parserError(" Iteration num should be between 5 and 4294967296\n");
        p.iters = n;
        break;
      }
      case "port": p.tcpPort = integer("Port", v, "int"); break;
      case "qp": {
        const n = integer("num of Qps", v, "int");
        if (n < 1 || n > 16384) parserError(" num of Qps should be between 1 and 16384\n");
        p.qps = n;
        break;
      }
      case "duration": {
        const n = integer("Duration period", v, "int");
        if (n <= 0) parserError(" Duration period should be positive\n");
        p.durationS = n;
        break;
      }
      case "mtu": p.mtu = integer("MTU", v, "int"); break;
      case "output":
        if (v !== "bandwidth" && v !== "message_rate") parserError(` Invalid output type: ${v} (the stand-in reports bandwidth or message_rate)\n`);
        p.output = v as Params["output"];
        break;
      case "out_json": p.outJson = true; break;
      case "out_json_file": p.outJson = true; p.outJsonFile = v; break;
      case "report_gbits": p.reportGbits = true; break;
      case "CPU-freq": break; // no CPU frequency warning is ever printed here
      case "version":
        out(`Version: ${VERSION}\n`);
        throw new Exit(1);
      case "help":
        out("Usage:\n  ib_write_bw            start a server and wait for connection\n  ib_write_bw <host>     connect to server at <host>\n");
        throw new Exit(1);
      default:
        parserError(`ib_write_bw (simulated): --${name} is not simulated; see sim/hosts/README.md\n`);
    }
  }
  p.server = positional[0] ?? null;
  return p;
}

// ---------- the HCA, from the host's sysfs ----------

const read = (file: string): string | null => {
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch {
    return null;
  }
};

interface Gid {
  readonly index: number;
  readonly bytes: number[];
  readonly text: string;
  readonly type: string | null;
}

interface Hca {
  readonly dev: string;
  readonly portDir: string;
  readonly linkType: "IB" | "Ethernet";
  readonly lid: number;
  /** The MTU enum (1 = 256 … 5 = 4096) of the port's active MTU. */
  readonly activeMtu: number;
  readonly numaNode: number | null;
  /** The GID this side uses; `missing` when -x is past the table (set_up_connection fails after connecting). */
  readonly gid: Gid | null | "missing";
}

const gidBytes = (text: string) => text.split(":").flatMap((g) => [parseInt(g.slice(0, 2), 16), parseInt(g.slice(2, 4), 16)]);
const isZero = (b: ReadonlyArray<number>) => b.every((x) => x === 0);
const isV4Mapped = (b: ReadonlyArray<number>) => b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;
const isLinkLocal = (b: ReadonlyArray<number>) => b[0] === 0xfe && (b[1] & 0xc0) === 0x80;

function readGid(portDir: string, index: number): Gid | null {
  const text = read(path.join(portDir, "gids", String(index)));
  if (text === null) return null;
  return { index, text, bytes: gidBytes(text), type: read(path.join(portDir, "gid_attrs", "types", String(index))) };
}

/** `get_best_gid_index` / `compute_gid_score`: IPv4 first, then global scope, then RoCE v2; the first best wins. */
function bestGid(portDir: string): Gid | null {
  let best: Gid | null = null;
  let bestScore = -1;
  const count = fs.readdirSync(path.join(portDir, "gids")).length;
  for (let i = 0; i < count; i++) {
    const g = readGid(portDir, i);
    if (!g || isZero(g.bytes)) continue;
    const v4 = isV4Mapped(g.bytes);
    const score = (v4 ? 4 : 0) + (!isLinkLocal(g.bytes) ? 2 : 0) + (g.type === "RoCE v2" ? 1 : 0);
    if (score > bestScore) [best, bestScore] = [g, score];
  }
  return best;
}

const MTU_ENUM: Record<number, number> = { 256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5 };
const mtuBytes = (e: number) => 128 << e;

function openHca(p: Params): Hca {
  let devs: string[] = [];
  try {
    devs = fs.readdirSync(SYSFS_IB).sort();
  } catch {
    // no RDMA driver: no class folder at all
  }
  if (devs.length === 0) fail(" Did not detect devices \n", " If device exists, check if driver is up\n", " Unable to find the Infiniband/RoCE device\n");
  const dev = p.dev ?? devs[0];
  if (!devs.includes(dev)) fail(`IB device ${dev} not found\n`, " Unable to find the Infiniband/RoCE device\n");
  const devDir = path.join(SYSFS_IB, dev);
  const portDir = path.join(devDir, "ports", String(p.ibPort));
  const linkFailure = (line: string): never => fail(line, " Couldn't set the link layer\n", " Couldn't get context for the device\n");
  if (!fs.existsSync(portDir)) linkFailure(` Unable to query port ${p.ibPort} attributes\n`);
  const state = parseInt(read(path.join(portDir, "state")) ?? "0", 10);
  if (state !== 4) linkFailure(` Port number ${p.ibPort} state is ${PORT_STATE_NAMES[state] ?? ""}\n`);
  const layer = read(path.join(portDir, "link_layer"));
  if (layer !== "Ethernet" && layer !== "InfiniBand") fail(`Link layer on port ${p.ibPort} is Unknown\n`, " Couldn't set the link layer\n", " Couldn't get context for the device\n");
  const linkType = layer === "Ethernet" ? "Ethernet" : "IB";

  // RoCE: mlx5's active MTU follows the netdev's (iboe_get_mtu); InfiniBand ports run 4096 here.
  let activeMtu = 5;
  if (linkType === "Ethernet") {
    const netdev = fs.readdirSync(path.join(devDir, "device", "net"))[0];
    const payload = Number(read(`/sys/class/net/${netdev}/mtu`) ?? "1500") - 96;
    activeMtu = [5, 4, 3, 2, 1].find((e) => payload >= mtuBytes(e)) ?? 1;
  }
  const numa = Number(read(path.join(devDir, "device", "numa_node")) ?? "-1");
  let gid: Hca["gid"] = null;
  if (p.gidIndex !== null) gid = readGid(portDir, p.gidIndex) ?? "missing";
  else if (linkType === "Ethernet") gid = bestGid(portDir);
  return { dev, portDir, linkType, lid: parseInt(read(path.join(portDir, "lid")) ?? "0", 16) || 0, activeMtu, numaNode: Number.isInteger(numa) && numa >= 0 ? numa : null, gid };
}

// ---------- the exchange channel ----------

class Channel {
  private buffer = "";
  private readonly queue: unknown[] = [];
  private waiter: ((v: unknown) => void) | null = null;
  private ended = false;

  constructor(readonly socket: net.Socket) {
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => {
      this.buffer += d;
      for (let nl = this.buffer.indexOf("\n"); nl >= 0; nl = this.buffer.indexOf("\n")) {
        this.push(JSON.parse(this.buffer.slice(0, nl)));
        this.buffer = this.buffer.slice(nl + 1);
      }
    });
    const end = () => {
      this.ended = true;
      this.push(null);
    };
    socket.on("end", end);
    socket.on("error", end);
    socket.on("close", end);
  }

  private push(v: unknown): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w(v);
    } else if (v !== null || this.queue.length === 0) this.queue.push(v);
  }

  send(v: unknown): void {
    if (!this.ended) this.socket.write(`${JSON.stringify(v)}\n`);
  }

  /** The peer's next message; a closed channel fails as perftest's `ctx_hand_shake` does. */
  async receive<T>(): Promise<T> {
    const v = this.queue.length ? this.queue.shift() : this.ended ? null : await new Promise((r) => (this.waiter = r));
    if (v === null || v === undefined) fail(" Failed to exchange data between server and clients\n");
    return v as T;
  }

  close(): void {
    this.socket.destroy();
  }
}

async function connect(p: Params): Promise<net.Socket> {
  if (p.server === null) {
    return new Promise((resolve) => {
      const server = net.createServer({ pauseOnConnect: false }, (s) => {
        server.close();
        resolve(s);
      });
      server.on("error", () => {
        process.stderr.write(`Couldn't listen to port ${p.tcpPort}\n Unable to init the socket connection\n`);
        process.exit(1);
      });
      server.listen({ port: p.tcpPort, host: "0.0.0.0" });
    });
  }
  let host = p.server;
  if (!net.isIPv4(host)) {
    try {
      host = (await dns.lookup(p.server, { family: 4 })).address;
    } catch {
      fail("Problem in resolving basic address and port\n", " Unable to init the socket connection\n");
    }
  }
  return new Promise((resolve) => {
    const s = net.connect({ host, port: p.tcpPort });
    s.once("connect", () => resolve(s));
    s.once("error", () => {
      process.stderr.write(`Couldn't connect to ${p.server}:${p.tcpPort}\n Unable to init the socket connection\n`);
      process.exit(1);
    });
  });
}

// ---------- the test ----------

interface DestMessage {
  dest: Omit<Dest, "vaddr"> & { vaddr: string };
  size: number;
  iters: number;
  durationS: number | null;
  /** Server only: where the client sends its bytes. */
  data?: { host: string; port: number };
}

interface ReportMessage {
  report: BwReport;
  bytes: number;
  messages: number;
  retransmits: number;
}

function makeDest(h: Hca): Dest {
  const gid = h.gid === null || h.gid === "missing" ? null : h.gid.bytes;
  return {
    lid: h.lid,
    qpn: randomInt(0x80, 0x1000),
    psn: randomInt(0, 0x1000000),
    rkey: randomInt(0x100000, 0x200000),
    vaddr: 0x7f0000000000n + BigInt(randomInt(0, 0x1000000)) * 0x1000n,
    gid,
  };
}

const toWire = (d: Dest) => ({ ...d, vaddr: d.vaddr.toString() });
const fromWire = (d: DestMessage["dest"]): Dest => ({ ...d, vaddr: BigInt(d.vaddr) });

/** The host's TCP retransmitted segments (its network namespace's /proc/net/snmp). */
function tcpRetransmits(): number {
  const lines = (read("/proc/net/snmp") ?? "").split("\n").filter((l) => l.startsWith("Tcp:"));
  if (lines.length < 2) return 0;
  const [names, values] = lines.map((l) => l.split(/\s+/));
  const at = names.indexOf("RetransSegs");
  return at > 0 ? Number(values[at]) || 0 : 0;
}

const elapsedS = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e9;

interface TestResult {
  messages: number;
  seconds: number;
  peakMessagesPerS: number;
}

/** Client: writes the messages into the server's stream and times the server's completions. */
async function sendMessages(p: Params, to: { host: string; port: number }, from: string | null): Promise<TestResult | { failed: true; scnt: number; ccnt: number }> {
  const total = p.durationS === null ? p.size * p.iters : Infinity;
  return new Promise((resolve) => {
    const acks: Array<[number, bigint]> = [];
    let t0 = process.hrtime.bigint();
    let sent = 0;
    let done = false;
    let stall: NodeJS.Timeout;
    let deadline: NodeJS.Timeout | undefined;
    const socket = net.connect({ host: to.host, port: to.port, ...(from ? { localAddress: from } : {}) });
    const finish = (v: TestResult | { failed: true; scnt: number; ccnt: number }) => {
      if (done) return;
      done = true;
      clearTimeout(stall);
      if (deadline) clearTimeout(deadline);
      socket.destroy();
      resolve(v);
    };
    const completed = () => (acks.length ? acks[acks.length - 1][0] : 0);
    const failNow = () => finish({ failed: true, scnt: Math.min(Math.ceil(sent / p.size), p.durationS === null ? p.iters : Infinity), ccnt: completed() });
    const armStall = () => {
      clearTimeout(stall);
      stall = setTimeout(failNow, QP_STALL_MS);
    };
    armStall();
    socket.on("error", () => {
      // A path that refuses or cannot be reached fails as the QP's retries run out, not at once.
      socket.removeAllListeners("data");
    });
    let pending = "";
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => {
      pending += d;
      for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
        const n = Number(pending.slice(0, nl));
        pending = pending.slice(nl + 1);
        acks.push([n, process.hrtime.bigint()]);
        armStall();
        if (p.durationS === null && n >= p.iters) {
          finish({ messages: n, seconds: elapsedS(t0), peakMessagesPerS: peak(acks, t0, n) });
        }
      }
    });
    socket.on("end", () => {
      if (p.durationS !== null && !done) {
        const n = completed();
        finish({ messages: n, seconds: acks.length ? Number(acks[acks.length - 1][1] - t0) / 1e9 : elapsedS(t0), peakMessagesPerS: 0 });
      }
    });
    socket.once("connect", () => {
      socket.setNoDelay(true);
      const chunk = Buffer.alloc(Math.max(p.size, Math.min(4 << 20, Math.ceil(262144 / p.size) * p.size)), 0xa5);
      t0 = process.hrtime.bigint();
      let stopAt = Infinity;
      if (p.durationS !== null) {
        stopAt = Date.now() + p.durationS * 1000;
        deadline = setTimeout(() => socket.end(), p.durationS * 1000);
      }
      const pump = () => {
        while (sent < total && Date.now() < stopAt && !done) {
          const n = Math.min(chunk.length, total - sent);
          sent += n;
          if (!socket.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void socket.once("drain", pump);
        }
        if (sent >= total) socket.end();
      };
      pump();
    });
  });
}

/**
 * perftest's peak: the fastest stretch between a post and a later completion (here, between two of
 * the server's completion reports at least half the test apart: shorter stretches measure the socket
 * buffers, not the path).
 */
function peak(acks: ReadonlyArray<[number, bigint]>, t0: bigint, total: number): number {
  const points: Array<[number, bigint]> = [[0, t0], ...acks];
  const span = Math.max(1, Math.ceil(total / 2));
  let best = 0;
  for (let j = 0; j < points.length; j++) {
    for (let k = j + 1; k < points.length; k++) {
      const n = points[k][0] - points[j][0];
      const dt = Number(points[k][1] - points[j][1]) / 1e9;
      if (n >= span && dt > 0) best = Math.max(best, n / dt);
    }
  }
  return best;
}

/** Server: counts the bytes written into its memory and reports completions back, `ackEvery` messages at a time. */
function receiveMessages(server: net.Server, size: number, ackEvery: number): Promise<{ bytes: number; messages: number }> {
  return new Promise((resolve) => {
    server.once("connection", (s) => {
      server.close();
      let bytes = 0;
      let reported = 0;
      s.on("data", (d: Buffer) => {
        bytes += d.length;
        const done = Math.floor(bytes / size);
        if (done - reported >= ackEvery) {
          reported = done;
          s.write(`${done}\n`);
        }
      });
      const end = () => {
        const done = Math.floor(bytes / size);
        s.end(`${done}\n`);
        resolve({ bytes, messages: done });
      };
      s.on("end", end);
      s.on("error", () => resolve({ bytes, messages: Math.floor(bytes / size) }));
    });
  });
}

/** What the traffic did to each end's port counters (4-byte data units, packets, ACKs the other way). */
function advanceCounters(h: Hca, role: "sender" | "receiver", t: { bytes: number; messages: number; mtuBytes: number; retransmits: number }): void {
  const packets = t.messages * Math.max(1, Math.ceil(t.bytes / Math.max(1, t.messages) / t.mtuBytes));
  const dataUnits = Math.floor((t.bytes + packets * PACKET_OVERHEAD + t.messages * RETH) / 4);
  const ackUnits = Math.floor((t.messages * ACK_BYTES) / 4);
  const counters = path.join(h.portDir, "counters");
  const hw = path.join(h.portDir, "hw_counters");
  if (role === "sender") {
    addCounters(counters, { port_xmit_data: dataUnits, port_xmit_packets: packets, unicast_xmit_packets: packets, port_rcv_data: ackUnits, port_rcv_packets: t.messages, unicast_rcv_packets: t.messages });
    addCounters(hw, { packet_seq_err: t.retransmits });
  } else {
    addCounters(counters, { port_rcv_data: dataUnits, port_rcv_packets: packets, unicast_rcv_packets: packets, port_xmit_data: ackUnits, port_xmit_packets: t.messages, unicast_xmit_packets: t.messages });
    addCounters(hw, { rx_write_requests: t.messages, out_of_sequence: t.retransmits });
  }
}

function info(p: Params, h: Hca, mtu: number, client: boolean): TestInfo {
  const txDepth = p.durationS === null ? Math.min(128, p.iters) : 128;
  return {
    device: h.dev,
    qps: p.qps,
    transportType: "IB",
    client,
    txDepth,
    cqMod: p.size > 8192 ? 1 : Math.min(100, txDepth),
    mtu: mtuBytes(mtu),
    linkType: h.linkType,
    gidIndex: h.gid === null || h.gid === "missing" ? null : h.gid.index,
    maxInline: p.size > 220 ? 0 : 220,
    numaNode: h.numaNode,
  };
}

function printReport(p: Params, r: BwReport, t: TestInfo): void {
  if (p.outJson) fs.writeFileSync(p.outJsonFile, reportJson(r, t));
  if (p.output === "bandwidth") out(`${r.average.toFixed(6)}\n`);
  else if (p.output === "message_rate") out(`${r.msgRateMpps.toFixed(6)}\n`);
  else out(reportRow(r, p.reportGbits));
}

async function main(argv: string[]): Promise<number> {
  process.title = "ib_write_bw";
  const p = parseArgs(argv);
  const full = p.output === "full";
  const noPeak = p.durationS !== null || p.iters > 20000;
  if (noPeak) out(" WARNING: BW peak won't be measured in this run.\n");
  const hca = openHca(p);
  const isServer = p.server === null;
  if (isServer && full) out(SERVER_BANNER);
  const channel = new Channel(await connect(p));
  try {
    channel.send({ version: VERSION });
    await channel.receive<{ version: string }>();

    // check_mtu: -m within the port's active MTU, then the smaller end's.
    let mtu = hca.activeMtu;
    if (p.mtu !== null) {
      const wanted = MTU_ENUM[p.mtu];
      if (wanted === undefined) {
        process.stderr.write(` Invalid MTU - ${p.mtu} \n Please choose mtu from {256,512,1024,2048,4096}\n Will run with the port active mtu - ${hca.activeMtu}\n`);
      } else if (wanted > hca.activeMtu) {
        out(`Requested mtu is higher than active mtu \nChanging to active mtu - ${hca.activeMtu}\n`);
      } else mtu = wanted;
    }
    channel.send({ mtu });
    mtu = Math.min(mtu, (await channel.receive<{ mtu: number }>()).mtu);

    // set_up_connection: ibv_query_gid of an index past the table fails here, after the TCP connect.
    if (hca.gid === "missing") fail(" Unable to set up socket connection\n");
    const ti = info(p, hca, mtu, !isServer);
    if (full) out(testInfo(ti));

    // The server's RDMA-written memory: where the client's bytes land (its GID's address, RoCE v2's port).
    const ownAddress = hca.gid && isV4Mapped(hca.gid.bytes) ? hca.gid.bytes.slice(12).join(".") : channel.socket.localAddress!.replace(/^::ffff:/, "");
    let dataServer: net.Server | null = null;
    let dataPort = ROCE_V2_PORT;
    const ackEvery = p.durationS === null ? Math.max(1, Math.ceil(p.iters / 256)) : Math.max(1, Math.ceil(262144 / p.size));
    let received: Promise<{ bytes: number; messages: number }> | null = null;
    if (isServer) {
      // RoCE v2's port on the GID's address; another port, or any address, only when that one is taken.
      const listen = (port: number, host: string) =>
        new Promise<net.Server | null>((resolve) => {
          const s = net.createServer();
          s.once("error", () => resolve(null));
          s.listen({ port, host }, () => resolve(s));
        });
      dataServer = (await listen(ROCE_V2_PORT, ownAddress)) ?? (await listen(0, ownAddress)) ?? (await listen(0, "0.0.0.0"));
      if (!dataServer) fail(" Couldn't create IB resources\n");
      dataPort = (dataServer.address() as net.AddressInfo).port;
      received = receiveMessages(dataServer, p.size, ackEvery);
    }
    const mine = makeDest(hca);
    channel.send({ dest: toWire(mine), size: p.size, iters: p.iters, durationS: p.durationS, ...(isServer ? { data: { host: ownAddress, port: dataPort } } : {}) } satisfies DestMessage);
    const theirs = await channel.receive<DestMessage>();
    const remote = fromWire(theirs.dest);

    if (mine.gid && remote.gid && isV4Mapped(mine.gid) !== isV4Mapped(remote.gid)) {
      fail("\n Found Incompatibility issue with GID types.\n", " Please Try to use a different IP version.\n\n");
    }
    // ctx_connect: an empty GID slot has no attributes, so the QP cannot move to RTR with it.
    if (mine.gid && isZero(mine.gid)) fail(`Failed to modify QP ${mine.qpn} to RTR\n`, " Unable to Connect the HCA's through the link\n");
    if (full) out(addressLines("local", mine));
    channel.send({ side: "remote" });
    await channel.receive<{ side: string }>();
    if (full) out(addressLines("remote", remote));
    channel.send({ rts: true });
    await channel.receive<{ rts: boolean }>();
    if (full) out(tableHeader(p.reportGbits));

    const unitBytes = p.reportGbits ? 125_000_000 : 0x100000;
    if (isServer) {
      const { report, retransmits } = await channel.receive<ReportMessage>();
      const got = await Promise.race([received!, new Promise<{ bytes: number; messages: number }>((r) => setTimeout(() => r({ bytes: 0, messages: 0 }), 5000))]);
      printReport(p, report, ti);
      if (full) out(RESULT_LINE);
      advanceCounters(hca, "receiver", { bytes: got.bytes, messages: got.messages, mtuBytes: mtuBytes(mtu), retransmits });
      return 0;
    }

    // RDMA WRITE past the end of the server's buffer (a bigger -s on the client) is refused by its HCA.
    if (p.size > theirs.size) {
      fail(" Completion with error at client\n", " Failed status-remote access error (10): wr_id 0 syndrom 0x88\n", " scnt=1, ccnt=0\n", " Failed to complete run_iter_bw function successfully\n");
    }
    const size = p.size;
    const before = tcpRetransmits();
    const result = await sendMessages(p, theirs.data!, hca.gid && isV4Mapped(hca.gid.bytes) ? ownAddress : null);
    const retransmits = Math.max(0, tcpRetransmits() - before);
    if ("failed" in result) {
      addCounters(path.join(hca.portDir, "hw_counters"), { local_ack_timeout_err: 8, req_transport_retries_exceeded: 1 });
      addCounters(path.join(hca.portDir, "counters"), { port_xmit_packets: 8, unicast_xmit_packets: 8 });
      fail(
        " Completion with error at client\n",
        ` Failed status-transport retry counter exceeded (12): wr_id ${result.ccnt} syndrom 0x81\n`,
        ` scnt=${result.scnt}, ccnt=${result.ccnt}\n`,
        " Failed to complete run_iter_bw function successfully\n",
      );
    }
    const capUnits = (PORT_RATE_GBPS * 1e9) / 8 / unitBytes;
    const average = Math.min(capUnits, (size * result.messages) / (result.seconds * unitBytes));
    const report: BwReport = {
      size,
      iters: result.messages,
      peak: noPeak ? 0 : Math.min(capUnits, Math.max(average, (size * result.peakMessagesPerS) / unitBytes)),
      average,
      msgRateMpps: result.messages / result.seconds / 1e6,
    };
    printReport(p, report, ti);
    if (full) out(RESULT_LINE);
    channel.send({ report, bytes: size * result.messages, messages: result.messages, retransmits } satisfies ReportMessage);
    advanceCounters(hca, "sender", { bytes: size * result.messages, messages: result.messages, mtuBytes: mtuBytes(mtu), retransmits });
    return 0;
  } finally {
    channel.socket.end();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof Exit) process.exit(err.code);
    process.stderr.write(`ib_write_bw (simulated): ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
