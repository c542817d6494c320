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
  /** The native runtime's `<runDir>/engine.log`, or an adopted runbook engine's `<run>/startup.log`. */
  | { readonly kind: "file"; readonly path: string }
  /** A container's log, read with `docker logs` (the container is the engine's process identity). */
  | { readonly kind: "container"; readonly dockerCommand: string };

/** What the native runtime's engine writes to (lib/runtime/native.ts). */
export function nativeEngineLog(runDir: string): EngineLogSource {
  return { kind: "file", path: `${runDir.replace(/\/+$/, "")}/${NATIVE_ENGINE_LOG}` };
}

/** What a native engine started by the runbook's launcher (narwhal's `launch_engine start`) writes to. */
export function runbookEngineLog(run: string): EngineLogSource {
  return { kind: "file", path: `${run.replace(/\/+$/, "")}/startup.log` };
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

/** The read of an engine's log; `containerId` is required for a container log. */
export function logReadScript(source: EngineLogSource, containerId: string | undefined, timeoutS: number, limitBytes = LOG_READ_LIMIT_BYTES): LogRead {
  if (source.kind === "file") {
    return {
      source: source.path,
      script: `set -u
f=${shq(source.path)}
if [ ! -e "$f" ]; then echo '${HEADER} missing'; exit 0; fi
if [ ! -f "$f" ]; then echo '${HEADER} notafile'; exit 0; fi
if [ ! -r "$f" ]; then echo '${HEADER} unreadable'; exit 0; fi
printf '${HEADER} file %s\\n' "$(wc -c < "$f" | tr -d ' ')"
exec head -c ${limitBytes} -- "$f"
`,
    };
  }
  if (!containerId || !/^[0-9a-f]{12,64}$/.test(containerId)) {
    throw new EngineError("NARWHAL_CACHE_LOG", `a container log needs the engine's container id (12-64 hex digits), got ${JSON.stringify(containerId ?? null)}`);
  }
  return {
    source: `${source.dockerCommand} logs ${containerId.slice(0, 12)}`,
    script: `set -u
docker=${shq(source.dockerCommand)}
id=${shq(containerId)}
if ! err=$(timeout -k 5 ${timeoutS} "$docker" inspect --format '{{.Id}}' "$id" 2>&1 >/dev/null); then
  echo '${HEADER} nocontainer'; printf '%s\\n' "$err" >&2; exit 0
fi
echo '${HEADER} stream'
timeout -k 5 ${timeoutS} "$docker" logs "$id" 2>&1 | head -c ${limitBytes}
`,
  };
}

export interface LogText {
  readonly text: string;
  /** Bytes read, and the file's size when the host knows it (a container log's is not known). */
  readonly readBytes: number;
  readonly totalBytes?: number;
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
      return { text, readBytes: Buffer.byteLength(text) };
    default:
      return fail(`reading the log printed an unknown header ${JSON.stringify(head.join(" "))}`);
  }
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
