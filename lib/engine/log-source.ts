/**
 * How the cache capture reads what a live engine shows on its host, over that host's SSH session: the
 * engine's log (a file, or a container's `docker logs`) and the model's config.json. The scripts and the
 * reading of their output are here; the provider runs them.
 */
import { parseModelFileSection } from "../discovery/model";
import { NATIVE_ENGINE_LOG } from "../runtime/native";
import { shq } from "../shell";
import { EngineError } from "./errors";
import type { LogOrigin, LogProcess } from "./startup-log";

/** Where an engine's stdout and stderr go, as its runtime arranges it. */
export type EngineLogSource =
  /**
   * Files a native engine's log may be in, tried in this order: the one whose API server is the serving
   * process is the engine's (an adopted runbook engine writes where its launcher sent it until a restart
   * from the run folder moves it there).
   */
  | { readonly kind: "files"; readonly paths: ReadonlyArray<string> }
  /** A container's log, read with `docker logs` since its latest start (the container is the engine's process identity). */
  | { readonly kind: "container"; readonly dockerCommand: string };

/** One place to read: a file, or one container's log. */
export type LogTarget = { readonly kind: "file"; readonly path: string } | { readonly kind: "container"; readonly dockerCommand: string; readonly containerId: string };

const clean = (dir: string) => dir.replace(/\/+$/, "");

/**
 * A native engine's log: the run folder's (lib/runtime/native.ts), and, with a runbook launch directory,
 * the `startup.log` narwhal's `launch_engine start` writes there.
 */
export function nativeEngineLogs(runDir: string, runbookRun?: string): EngineLogSource {
  return { kind: "files", paths: [`${clean(runDir)}/${NATIVE_ENGINE_LOG}`, ...(runbookRun === undefined ? [] : [`${clean(runbookRun)}/startup.log`])] };
}

/** The places to read for `source`; a container log needs the engine's container id. */
export function logTargets(source: EngineLogSource, containerId: string | undefined): LogTarget[] {
  if (source.kind === "files") return source.paths.map((path) => ({ kind: "file", path }));
  if (!containerId || !/^[0-9a-f]{12,64}$/.test(containerId)) {
    throw new EngineError("NARWHAL_CACHE_LOG", `a container log needs the engine's container id (12-64 hex digits), got ${JSON.stringify(containerId ?? null)}`);
  }
  return [{ kind: "container", dockerCommand: source.dockerCommand, containerId }];
}

/** The startup lines come first; a log is read up to this many bytes (a bound, named when it bites). */
export const LOG_READ_LIMIT_BYTES = 16 * 2 ** 20;
/** config.json is small; a larger one is refused rather than read. */
export const CONFIG_READ_LIMIT_BYTES = 4 * 2 ** 20;

const HEADER = "narwhal-log";

export interface LogRead {
  /** The script to run on the host; it prints a header line, then the log's first bytes. */
  readonly script: string;
  /** The file, or the command, as messages and the evidence name it. */
  readonly source: string;
}

/**
 * The read of one log. A container's is read since its latest start (`docker logs --since` its
 * `State.StartedAt`): `docker restart`, which a peer wave runs, keeps the earlier runs' lines in it.
 */
export function logReadScript(target: LogTarget, timeoutS: number, limitBytes = LOG_READ_LIMIT_BYTES): LogRead {
  if (target.kind === "file") {
    return {
      source: target.path,
      script: `set -u
f=${shq(target.path)}
if [ ! -e "$f" ]; then echo '${HEADER} missing'; exit 0; fi
if [ ! -f "$f" ]; then echo '${HEADER} notafile'; exit 0; fi
if [ ! -r "$f" ]; then echo '${HEADER} unreadable'; exit 0; fi
printf '${HEADER} file %s\\n' "$(wc -c < "$f" | tr -d ' ')"
exec head -c ${limitBytes} -- "$f"
`,
    };
  }
  return {
    source: `${target.dockerCommand} logs ${target.containerId.slice(0, 12)}`,
    script: `set -u
docker=${shq(target.dockerCommand)}
id=${shq(target.containerId)}
if ! started=$(timeout -k 5 ${timeoutS} "$docker" inspect --format '{{.State.StartedAt}}' "$id" 2>&1); then
  echo '${HEADER} nocontainer'; printf '%s\\n' "$started" >&2; exit 0
fi
echo "${HEADER} stream $started"
timeout -k 5 ${timeoutS} "$docker" logs --since "$started" "$id" 2>&1 | head -c ${limitBytes}
`,
  };
}

export interface LogText {
  readonly text: string;
  /** Bytes read, and the file's size when the host knows it (a container log's is not known). */
  readonly readBytes: number;
  readonly totalBytes?: number;
  /** A container's latest start (`State.StartedAt`): its log was read from there. */
  readonly since?: string;
}

/** The script's output as the log's text, or an error naming host and source when there is no log to read. */
export function parseLogRead(stdout: string, stderr: string, origin: Pick<LogOrigin, "host" | "source">): LogText {
  const nl = stdout.indexOf("\n");
  const head = (nl < 0 ? stdout : stdout.slice(0, nl)).split(" ");
  const text = nl < 0 ? "" : stdout.slice(nl + 1);
  const at = `host ${origin.host}: ${origin.source}`;
  const fail = (detail: string): never => {
    throw new EngineError("NARWHAL_CACHE_LOG", `${at}: ${detail}`, detail);
  };
  if (head[0] !== HEADER) fail(`reading the log printed no header (${JSON.stringify(stdout.slice(0, 80))}${stderr.trim() ? `; ${stderr.trim().split("\n").slice(-2).join(" | ")}` : ""})`);
  switch (head[1]) {
    case "missing":
      return fail("the engine's log does not exist: it was removed or rotated away since the engine started, so its startup lines cannot be read; restart the engine to capture its cache");
    case "notafile":
      return fail("the engine's log is not a regular file");
    case "unreadable":
      return fail("the engine's log is not readable by the SSH user");
    case "nocontainer":
      return fail(`the daemon has no such container (${stderr.trim().split("\n").slice(-1)[0] ?? "no error output"})`);
    case "file":
      return { text, readBytes: Buffer.byteLength(text), totalBytes: Number(head[2]) };
    case "stream":
      return { text, readBytes: Buffer.byteLength(text), ...(head[2] ? { since: head[2] } : {}) };
    default:
      return fail(`reading the log printed an unknown header ${JSON.stringify(head.join(" "))}`);
  }
}

/**
 * When no candidate log is the serving engine's: the one refusal as it was, or each file with why it was
 * refused, as one error naming the host.
 */
export function noServingLog(host: string, refusals: ReadonlyArray<{ source: string; error: EngineError }>): EngineError {
  if (refusals.length === 1) return refusals[0].error;
  const code = refusals.some((r) => r.error.code === "NARWHAL_CACHE_LOG_ROTATED") ? "NARWHAL_CACHE_LOG_ROTATED" : "NARWHAL_CACHE_LOG";
  const detail = `no log of the serving engine: ${refusals.map((r) => `${r.source}: ${r.error.reason ?? r.error.message}`).join("; ")}`;
  return new EngineError(code, `host ${host}: ${detail}`, detail);
}

/** Prints config.json as discovery's probe does: a status line, then its exact bytes in base64. */
export function configReadScript(modelDir: string, limitBytes = CONFIG_READ_LIMIT_BYTES): string {
  return `set -u
f=${shq(`${modelDir.replace(/\/+$/, "")}/config.json`)}
if [ ! -e "$f" ]; then echo missing
elif [ ! -f "$f" ]; then echo notafile
elif [ ! -r "$f" ]; then echo unreadable
else
  size=$(wc -c < "$f" | tr -d ' ')
  if [ "$size" -gt ${limitBytes} ]; then echo "toolarge $size"
  elif ! command -v base64 >/dev/null 2>&1; then echo nobase64
  else
    echo "file $size $(sha256sum < "$f" 2>/dev/null | cut -d' ' -f1)"
    base64 < "$f"
  fi
fi
`;
}

/** config.json's exact bytes from the script's output, or an error naming the host and the file. */
export function parseConfigRead(stdout: string, host: string, modelDir: string): Buffer {
  const file = `${modelDir.replace(/\/+$/, "")}/config.json`;
  const fail = (detail: string): never => {
    throw new EngineError("NARWHAL_CACHE_LAYOUT_SOURCE", `host ${host}: ${file} ${detail}`, `${file} ${detail}`);
  };
  let section;
  try {
    section = parseModelFileSection(stdout);
  } catch (err) {
    return fail(`could not be read: ${(err as Error).message}`);
  }
  switch (section.status) {
    case "file":
      return section.bytes;
    case "toolarge":
      return fail(`is ${section.size} bytes, more than the ${CONFIG_READ_LIMIT_BYTES} a model config can be`);
    case "nobase64":
      return fail("cannot be read: the host has no base64 command");
    case "notafile":
      return fail("is not a regular file");
    default:
      return fail(`is ${section.status}; the capture needs the model's layers, heads and head size from it`);
  }
}

/** When process `pid` started, as the host's /proc says (boot time, its start ticks, the tick rate), or that it is gone. */
export function processStartScript(pid: number): string {
  if (!Number.isInteger(pid) || pid < 1) throw new EngineError("NARWHAL_CACHE_LOG", `the log names API server pid ${JSON.stringify(pid)}, which is no process id`);
  return `set -u
if [ -r /proc/${pid}/stat ]; then
  # Field 22, counted after the command name (which may hold spaces) closes with ") ".
  ticks=$(sed 's/^.*) //' /proc/${pid}/stat | cut -d' ' -f20)
  echo "started $(awk '/^btime/ {print $2}' /proc/stat) $ticks $(getconf CLK_TCK)"
else
  echo gone
fi
`;
}

/** The script's answer; anything else is an error naming the host. */
export function parseProcessStart(stdout: string, host: string, pid: number): LogProcess {
  const words = stdout.trim().split(/\s+/);
  if (words[0] === "gone") return { running: false };
  const [btime, ticks, hz] = words.slice(1).map(Number);
  if (words[0] !== "started" || ![btime, ticks, hz].every((n) => Number.isFinite(n)) || !(hz > 0)) {
    throw new EngineError("NARWHAL_CACHE_LOG", `host ${host}: reading when pid ${pid} started printed ${JSON.stringify(stdout.trim().slice(0, 80))}`);
  }
  return { running: true, startedAtS: btime + ticks / hz };
}
