/**
 * The tail of a live engine's log on its host, for the preflight's failing lines (the runbook keeps each
 * engine's log for the window of a failure): the last bytes of its file, or of its container's `docker
 * logs`. Where the log is comes from the engine's runtime, as the cache capture reads it (./log-source.ts).
 */
import { shq } from "../shell";
import type { LogTarget } from "./log-source";

/** Bytes of a log kept per engine and failure: the lines around a failure, not the whole run. */
export const LOG_TAIL_BYTES = 64 * 1024;

/** The script printing the tail of `target` (exit 3 with a reason on stderr when there is no log), and its name. */
export function logTailScript(target: LogTarget, timeoutS: number, bytes = LOG_TAIL_BYTES): { source: string; script: string } {
  if (target.kind === "file") {
    return {
      source: target.path,
      script: `f=${shq(target.path)}
[ -f "$f" ] || { echo "no log file at $f" >&2; exit 3; }
exec tail -c ${bytes} -- "$f"
`,
    };
  }
  return {
    source: `${target.dockerCommand} logs ${target.containerId.slice(0, 12)}`,
    script: `set -o pipefail 2>/dev/null || true
timeout -k 5 ${timeoutS} ${shq(target.dockerCommand)} logs --tail 2000 ${shq(target.containerId)} 2>&1 | tail -c ${bytes}
`,
  };
}
