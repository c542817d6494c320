/**
 * What a vLLM 0.29 engine's startup log says about its KV cache, read from the log's text and checked to
 * be the log of the process that serves now. The lines are vLLM 0.29.0's (reference:
 * vllm-restart-facts.md §4), each behind the prefix vLLM's `decorate_logs` gives the process that wrote
 * it: `(APIServer pid=…)`, `(EngineCore pid=…)` or `(EngineCore_DP<n> pid=…)`, and with TP > 1
 * `(Worker_TP<r> pid=…)` per rank (with TP 1 the worker code runs in the engine core).
 *
 * | line                                                           | process      | read as                         |
 * |----------------------------------------------------------------|--------------|---------------------------------|
 * | `vLLM API server version V`                                    | APIServer    | the start this log belongs to   |
 * | `non-default args: {… 'tensor_parallel_size': N …}`            | APIServer    | TP size (absent: the workers')  |
 * | `Using LBHNC KV cache layout.`                                 | EngineCore   | layout, when a rank names none  |
 * | `GPU KV cache size: N tokens, Maximum concurrency for L …: C x` | EngineCore   | capacity, checked with /metrics |
 * | `Using <BACKEND> attention backend out of potential backends`  | each rank    | attention backend               |
 * | `Detected attention backend(s) ['<BACKEND>']`                  | each rank    | attention backend (NIXL worker) |
 * | `Detected kv cache layout LBHNC`                               | each rank    | KV cache layout (NIXL worker)   |
 * | `Initializing NIXL worker <engine_id>`                         | each rank    | NIXL engine id                  |
 * | `Available KV cache memory: X GiB`                             | each rank    | the rank sized its cache        |
 *
 * A log that no longer begins with this start is refused, never guessed from: a file truncated while the
 * engine kept writing (it begins with NUL bytes), a log whose first vLLM line is not the API server's
 * startup (rotated, or truncated and written on), or one holding a second start. Where the host can say
 * when the log's API server process started (a native engine), it must be the process serving now
 * ({@link checkLogIsServingProcess}): a log another start wrote is refused too.
 */
import { EngineError } from "./errors";

/** One line of the log as read: its 1-based number and its text (colour codes and a trailing CR removed). */
export interface LogLine {
  readonly n: number;
  readonly text: string;
}

/** One TP rank as the log shows it. */
export interface RankStartup {
  readonly rank: number;
  /** The process that spoke for it: `Worker_TP1`, or `EngineCore` with TP 1. */
  readonly process: string;
  readonly pid: number;
  readonly attentionBackend: string;
  readonly kvCacheLayout: string;
  readonly availableKvCacheGiB: number;
  /** `Initializing NIXL worker <id>`; null without a NIXL connector. */
  readonly nixlEngineId: string | null;
  /** The lines the rank's facts were read from. */
  readonly lines: ReadonlyArray<LogLine>;
}

/** What the log says about the engine's KV cache. */
export interface EngineStartup {
  readonly apiServer: { readonly pid: number; readonly version: string };
  readonly tensorParallelSize: number;
  /** Every rank that sized its cache, in rank order. */
  readonly ranks: ReadonlyArray<RankStartup>;
  /** `GPU KV cache size: N tokens, …`: the engine core's capacity. */
  readonly capacity: { readonly tokens: number; readonly maxModelLen: number | null; readonly maxConcurrency: number | null };
  /** Every line a fact was read from (API server, engine core and ranks), in log order. */
  readonly lines: ReadonlyArray<LogLine>;
}

/** Where the log was read, for messages: `host gpu-a: /runs/e1/engine.log` or `host gpu-a: docker logs 0123…`. */
export interface LogOrigin {
  readonly host: string;
  /** The file, or the command that printed the log. */
  readonly source: string;
  /** How many bytes were read; when the log is longer, only these were (a bound, not the log). */
  readonly readBytes?: number;
  readonly totalBytes?: number;
}

const ANSI = /\x1b\[[0-9;]*m/g;
/** `(Name pid=123) rest`: the prefix decorate_logs writes before each line of a process. */
const PREFIX = /^\(([A-Za-z][A-Za-z0-9_]*) pid=(\d+)\) (.*)$/;
/** vLLM's `_FORMAT` after the prefix: `LEVEL MM-DD HH:MM:SS [file:line] message`. */
const RECORD = /^(DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[[^\]]*\] (.*)$/;
const WORKER = /^Worker(?:_DP(\d+))?(?:_PP(\d+))?(?:_TP(\d+))?(?:_EP\d+)?$/;
const ENGINE_CORE = /^EngineCore(?:_DP(\d+))?$/;

const STARTUP = /^vLLM API server version (\S+)$/;
const TP_ARG = /'tensor_parallel_size': (\d+)/;
const BACKEND = /^Using ([A-Za-z][A-Za-z0-9_]*) attention backend out of potential backends/;
const DETECTED_BACKENDS = /^Detected attention backend\(s\) \[([^\]]*)\]$/;
const WORKER_LAYOUT = /^Detected kv cache layout ([A-Z]+)$/;
const CORE_LAYOUT = /^Using ([A-Z]+) KV cache layout\.$/;
const NIXL_WORKER = /^Initializing NIXL worker (\S+)$/;
const AVAILABLE = /^Available KV cache memory: ([\d.]+) GiB$/;
const CAPACITY = /^GPU KV cache size: ([\d,]+) tokens(?:, Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+) ?x)?$/;

interface Parsed {
  line: LogLine;
  process: string;
  pid: number;
  message: string;
}

function where(o: LogOrigin): string {
  return `host ${o.host}: ${o.source}`;
}

function fail(code: "NARWHAL_CACHE_LOG" | "NARWHAL_CACHE_LOG_ROTATED", o: LogOrigin, detail: string): never {
  throw new EngineError(code, `${where(o)}: ${detail}`, detail);
}

/** The log's lines, numbered from 1, colour codes and trailing CRs removed. */
export function logLines(text: string): LogLine[] {
  const body = text.endsWith("\n") ? text.slice(0, -1) : text;
  if (body === "") return [];
  return body.split("\n").map((raw, i) => ({ n: i + 1, text: raw.replace(ANSI, "").replace(/\r+$/, "") }));
}

/** Lines written by a vLLM process (with its prefix), with the message of those in vLLM's log format. */
function prefixed(lines: ReadonlyArray<LogLine>): Parsed[] {
  const out: Parsed[] = [];
  for (const line of lines) {
    const m = PREFIX.exec(line.text);
    if (!m) continue;
    const record = RECORD.exec(m[3]);
    out.push({ line, process: m[1], pid: Number(m[2]), message: record ? record[2] : "" });
  }
  return out;
}

/** The TP rank a process speaks for, or null when it speaks for none; refuses data or pipeline parallelism. */
function rankOf(p: Parsed, tp: number, o: LogOrigin): number | null {
  const worker = WORKER.exec(p.process);
  if (worker) {
    if (worker[1] !== undefined || worker[2] !== undefined) {
      fail("NARWHAL_CACHE_LOG", o, `line ${p.line.n} is from ${p.process}: the capture reads engines with one data-parallel rank and one pipeline stage`);
    }
    return worker[3] === undefined ? 0 : Number(worker[3]);
  }
  return tp === 1 && ENGINE_CORE.test(p.process) ? 0 : null;
}

/** Python's repr of a list of strings, read back: `['FLASH_ATTN']`. */
function pyStrings(list: string): string[] {
  return list
    .split(",")
    .map((s) => s.trim().replace(/^'(.*)'$/, "$1"))
    .filter((s) => s !== "");
}

const num = (s: string) => Number(s.replace(/,/g, ""));

/**
 * Checks that `text` is the whole log of the start that serves now (see the header), then reads each
 * rank's facts. Throws `NARWHAL_CACHE_LOG_ROTATED` for a log of another start or a cut one, and
 * `NARWHAL_CACHE_LOG` for one missing a line the capture needs; both name the host and the file.
 */
export function readEngineStartup(text: string, origin: LogOrigin): EngineStartup {
  const o = origin;
  const cut = o.readBytes !== undefined && o.totalBytes !== undefined && o.totalBytes > o.readBytes;
  const lines = logLines(text);
  if (lines.length === 0) {
    fail("NARWHAL_CACHE_LOG_ROTATED", o, "the log is empty: it was truncated or replaced since the engine started (the engine writes its startup lines before it serves)");
  }
  const nul = /^\0+/.exec(text);
  if (nul) {
    fail(
      "NARWHAL_CACHE_LOG_ROTATED",
      o,
      `the log begins with ${nul[0].length} NUL bytes: it was truncated while the engine kept writing (copytruncate rotation), so its startup lines are gone; restart the engine to capture its cache`,
    );
  }
  const all = prefixed(lines);
  const first = all[0];
  if (!first) fail("NARWHAL_CACHE_LOG", o, "no line of the log has a vLLM process prefix such as (APIServer pid=…): it is not a vLLM 0.29 engine's log");
  const startup = STARTUP.exec(first.message);
  if (first.process !== "APIServer" || !startup) {
    fail(
      "NARWHAL_CACHE_LOG_ROTATED",
      o,
      `the log's first vLLM line (line ${first.line.n}, ${JSON.stringify(first.line.text.slice(0, 160))}) is not the API server's startup line ` +
        "'vLLM API server version …': it was rotated or truncated since the engine started, so the startup lines it needs are gone; restart the engine to capture its cache",
    );
  }
  const apiPid = first.pid;
  const again = all.slice(1).find((p) => p.process.startsWith("APIServer") && STARTUP.test(p.message));
  if (again) {
    fail("NARWHAL_CACHE_LOG_ROTATED", o, `the log holds a second engine start at line ${again.line.n} (API server pid ${again.pid}): it is not the log of one start`);
  }

  const used: LogLine[] = [first.line];
  const api = all.filter((p) => p.process === "APIServer" && p.pid === apiPid);
  const tpLine = api.find((p) => p.message.startsWith("non-default args: ") && TP_ARG.test(p.message));
  // Without the flag, the workers' own names say how many ranks there are (none: the engine core is the one rank).
  const workerRanks = all.map((p) => WORKER.exec(p.process)?.[3]).filter((r): r is string => r !== undefined).map(Number);
  const tp = tpLine ? Number(TP_ARG.exec(tpLine.message)![1]) : workerRanks.length ? Math.max(...workerRanks) + 1 : 1;
  // The rest of that line is every non-default flag, which is not the capture's to keep.
  if (tpLine) used.push({ n: tpLine.line.n, text: `${tpLine.line.text.slice(0, tpLine.line.text.indexOf("non-default args: "))}non-default args: {… 'tensor_parallel_size': ${tp} …}` });

  const core = all.filter((p) => ENGINE_CORE.test(p.process));
  const coreLayout = core.map((p) => ({ p, m: CORE_LAYOUT.exec(p.message) })).find((x) => x.m);
  if (coreLayout) used.push(coreLayout.p.line);
  const capacityAt = core.map((p) => ({ p, m: CAPACITY.exec(p.message) })).find((x) => x.m);
  if (!capacityAt) {
    fail("NARWHAL_CACHE_LOG", o, `the engine core never logged 'GPU KV cache size: N tokens, …'${cut ? ` in the first ${o.readBytes} bytes read` : ""}: its cache was not sized, or the log is not a vLLM 0.29 engine's`);
  }
  used.push(capacityAt.p.line);

  interface Seen {
    process: string;
    pid: number;
    backend?: string;
    detected?: string;
    layout?: string;
    available?: number;
    nixl?: string;
    lines: LogLine[];
  }
  const seen = new Map<number, Seen>();
  for (const p of all) {
    const rank = rankOf(p, tp, o);
    if (rank === null) continue;
    const r = seen.get(rank) ?? { process: p.process, pid: p.pid, lines: [] };
    seen.set(rank, r);
    const rules: Array<[RegExp, (m: RegExpExecArray) => void]> = [
      [BACKEND, (m) => (r.backend = m[1])],
      [DETECTED_BACKENDS, (m) => (r.detected = pyStrings(m[1]).join(","))],
      [WORKER_LAYOUT, (m) => (r.layout = m[1])],
      [NIXL_WORKER, (m) => (r.nixl = m[1])],
      [AVAILABLE, (m) => (r.available = Number(m[1]))],
    ];
    for (const [pattern, set] of rules) {
      const m = pattern.exec(p.message);
      if (!m) continue;
      set(m);
      r.lines.push(p.line);
      break;
    }
  }

  const ranks: RankStartup[] = [];
  for (const [rank, r] of [...seen].sort(([a], [b]) => a - b)) {
    if (r.available === undefined) continue; // a rank that never sized its cache is reported missing by the layout check
    const who = `rank ${rank} (${r.process} pid=${r.pid})`;
    const attentionBackend = r.backend ?? r.detected;
    if (!attentionBackend) fail("NARWHAL_CACHE_LOG", o, `${who} logged no attention backend ('Using <BACKEND> attention backend …' or 'Detected attention backend(s) […]')`);
    const kvCacheLayout = r.layout ?? coreLayout?.m![1];
    if (!kvCacheLayout) fail("NARWHAL_CACHE_LOG", o, `${who} logged no KV cache layout ('Detected kv cache layout …'), and neither did the engine core ('Using … KV cache layout.')`);
    ranks.push({ rank, process: r.process, pid: r.pid, attentionBackend, kvCacheLayout, availableKvCacheGiB: r.available, nixlEngineId: r.nixl ?? null, lines: r.lines });
    used.push(...r.lines);
  }
  const c = capacityAt.m!;
  return {
    apiServer: { pid: apiPid, version: startup[1] },
    tensorParallelSize: tp,
    ranks,
    capacity: { tokens: num(c[1]), maxModelLen: c[2] === undefined ? null : num(c[2]), maxConcurrency: c[3] === undefined ? null : Number(c[3]) },
    lines: [...new Set(used)].sort((a, b) => a.n - b.n),
  };
}

/** What the host says of the log's API server pid: gone, or when it started (seconds since the epoch). */
export type LogProcess = { readonly running: false } | { readonly running: true; readonly startedAtS: number };

/**
 * `/proc` and `/metrics` compute a process's start the same way (boot time plus its start ticks), but
 * boot time is whole seconds and the simulator's clock reads its own start: a second and a half apart is
 * the same process.
 */
export const PROCESS_START_TOLERANCE_S = 1.5;

/**
 * The log's API server must be the process serving now: running, and started when the serving engine's
 * `/metrics` `process_start_time_seconds` says it did. Otherwise the log is another start's (a restart
 * that wrote elsewhere, a copy, a leftover), refused naming the host, the file and both processes.
 */
export function checkLogIsServingProcess(startup: EngineStartup, process: LogProcess, servingStartS: number, origin: LogOrigin): void {
  const pid = startup.apiServer.pid;
  if (!process.running) {
    fail("NARWHAL_CACHE_LOG_ROTATED", origin, `the log was written by API server pid ${pid}, which no longer runs: it is another start's log, not the serving engine's (started ${new Date(servingStartS * 1000).toISOString()})`);
  }
  if (Math.abs(process.startedAtS - servingStartS) > PROCESS_START_TOLERANCE_S) {
    fail(
      "NARWHAL_CACHE_LOG_ROTATED",
      origin,
      `the log was written by API server pid ${pid}, started ${new Date(process.startedAtS * 1000).toISOString()}, but the serving engine started ` +
        `${new Date(servingStartS * 1000).toISOString()} (process_start_time_seconds): it is another start's log`,
    );
  }
}
