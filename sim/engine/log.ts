/**
 * Log lines in vLLM 0.29's format, so that whoever reads a simulated engine's output (Gate C's cache
 * capture, the host harness, a human) sees what a real engine prints:
 *
 *   (Worker_TP1 pid=4243) INFO 11-29 08:32:10 [gpu_worker.py:298] Available KV cache memory: 72.55 GiB
 *
 * - the process prefix is what vLLM's `decorate_logs` puts before every line a process writes to stdout
 *   and stderr (`(APIServer pid=…)`, `(EngineCore pid=…)`, `(Worker_TP<r> pid=…)`), uncoloured when
 *   the stream is not a terminal. The simulator is one process: it speaks for the engine core and each
 *   TP worker under the pids they would have had if spawned right after it (pid+1, pid+2+rank); with
 *   TP 1 the worker code runs inside the engine core, so its lines carry the engine core's prefix;
 * - `LEVEL MM-DD HH:MM:SS [file:line] message` is vllm/logger.py's `_FORMAT`; with
 *   `VLLM_LOGGING_LEVEL=DEBUG` the file is the shortened path below `vllm/` (NewLineFormatter's
 *   `shrink_path`) and DEBUG lines are printed, otherwise the file's base name and INFO and up.
 *
 * vLLM's default handler writes every level to stdout.
 */

type Level = "DEBUG" | "INFO" | "WARNING" | "ERROR";

const SEVERITY: Readonly<Record<Level | "CRITICAL", number>> = { DEBUG: 10, INFO: 20, WARNING: 30, ERROR: 40, CRITICAL: 50 };

/** VLLM_LOGGING_LEVEL as vLLM reads it (upper-cased; default INFO); an unknown name counts as INFO. */
function threshold(env: NodeJS.ProcessEnv): number {
  const name = (env.VLLM_LOGGING_LEVEL ?? "INFO").toUpperCase() as keyof typeof SEVERITY;
  return SEVERITY[name] ?? SEVERITY.INFO;
}

const settings = { threshold: threshold(process.env), relpath: threshold(process.env) === SEVERITY.DEBUG };

/** Re-reads VLLM_LOGGING_LEVEL (tests change it between engines of one process). */
export function configureLogging(env: NodeJS.ProcessEnv): void {
  settings.threshold = threshold(env);
  settings.relpath = settings.threshold === SEVERITY.DEBUG;
}

function stamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/**
 * NewLineFormatter's `shrink_path` of a path below `vllm/`: `v1/...` keeps its first two parts, anything
 * else its first, and a path longer than that plus two collapses its middle to `...`.
 */
export function shrinkPath(relpath: string): string {
  let parts = relpath.split("/");
  const head = parts[0] === "v1" ? parts.slice(0, 2) : parts.slice(0, 1);
  parts = parts.slice(head.length);
  return [...head, ...(parts.length > 2 ? ["...", ...parts.slice(-2)] : parts)].join("/");
}

/** `source` is `<path below vllm/>:<line>`, e.g. `v1/worker/gpu_worker.py:298`. */
function fileinfo(source: string): string {
  const colon = source.lastIndexOf(":");
  const file = source.slice(0, colon);
  const shown = settings.relpath ? shrinkPath(file) : file.slice(file.lastIndexOf("/") + 1);
  return `${shown}${source.slice(colon)}`;
}

/** One (simulated) vLLM process's output: its prefix on every line. */
export class ProcessLog {
  readonly prefix: string;

  constructor(
    readonly name: string,
    readonly pid: number,
  ) {
    this.prefix = `(${name} pid=${pid}) `;
  }

  log(level: Level, source: string, message: string): void {
    if (SEVERITY[level] < settings.threshold) return;
    this.write(`${level} ${stamp(new Date())} [${fileinfo(source)}] ${message}`);
  }

  debug(source: string, message: string): void {
    this.log("DEBUG", source, message);
  }

  info(source: string, message: string): void {
    this.log("INFO", source, message);
  }

  warn(source: string, message: string): void {
    this.log("WARNING", source, message);
  }

  error(source: string, message: string): void {
    this.log("ERROR", source, message);
  }

  /** Text another logger formatted (uvicorn's `INFO:     …`, a Python exception): prefixed line by line. */
  write(text: string, stream: NodeJS.WriteStream = process.stdout, done?: () => void): void {
    const body = text.endsWith("\n") ? text.slice(0, -1) : text;
    stream.write(body.split("\n").map((l) => this.prefix + l).join("\n") + "\n", done);
  }
}

/** The API server: the process `vllm serve` runs as (its pid is the one a launcher records). */
export const apiServer = new ProcessLog("APIServer", process.pid);
/** The engine core (one data-parallel rank, so no `_DP<n>` suffix). */
export const engineCore = new ProcessLog("EngineCore", process.pid + 1);

/** Each TP rank's log: the workers' own with TP > 1, the engine core's with TP 1. */
export function workerLogs(tensorParallelSize: number): ProcessLog[] {
  if (tensorParallelSize === 1) return [engineCore];
  return Array.from({ length: tensorParallelSize }, (_, r) => new ProcessLog(`Worker_TP${r}`, process.pid + 2 + r));
}

/** Python's `f"{n:,}"` for integers. */
export function thousands(n: number): string {
  return Math.trunc(n).toLocaleString("en-US");
}

/** Python's `str(float)` for the values we print (0.92 -> "0.92", 1 -> "1.0"). */
export function pyFloat(x: number): string {
  if (Number.isInteger(x)) return x.toFixed(1);
  return String(x);
}
