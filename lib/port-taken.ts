/**
 * The refusal a script prints when a service's port already has a listener on its host: one line naming
 * the host, the port, the owning process (pid and command line, from `ss -Hltnp` and /proc) and the fix.
 * It is the script's last line on stderr, which the command provider puts first in its error. The router,
 * Prometheus, Grafana and the evidence freshness exporter all refuse with it: in their start scripts, and
 * in the port check that runs before a replacement or swap stops the serving process.
 */
import { shq } from "./shell";
import { PID_FILE_SH } from "./pid-file";

/**
 * The service's own running process, the one a replacement takes over: a listener that is it (or in its
 * process group) is not a conflict. A native process's pid file, or a container's name (its main pid).
 */
export type OwnProcess = { readonly pidFile: string } | { readonly pidFiles: readonly string[] } | { readonly container: string };

export interface TakenPort {
  /** What wanted the port: `router`, `prometheus`, `grafana`, `evidence freshness exporter`. */
  readonly what: string;
  readonly port: number;
  /** The config key that chooses the port (`router.port`, `observability.prometheusPort`). */
  readonly configKey: string;
  /** The host's alias in the fleet config; absent: "this host". */
  readonly hostAlias?: string;
  /** Absent: any listener is a conflict (a start, which never takes over a running process itself). */
  readonly own?: OwnProcess;
}

/** The refusal, given the owner the shell found (`pid 1234 (python3 -m http.server 8921)`). */
export function takenPortMessage(t: TakenPort, owner: string): string {
  const where = t.hostAlias ? `host ${t.hostAlias}` : "this host";
  return `${t.what}: port ${t.port} on ${where} is taken by ${owner}; stop that process or set ${t.configKey} to a free port, then run pulumi up again`;
}

/**
 * The owner of one listener as `ss -Hltnp` prints it (`users:(("python3",pid=1234,fd=3))`): its first pid
 * and name, or undefined when the line names none (another user's process seen without privilege). The
 * shell's `sed` in {@link refuseTakenPortLines} reads the pid the same way.
 */
export function ownerFromSs(ssLine: string): { pid: number; name: string } | undefined {
  const m = /users:\(\("((?:[^"\\]|\\.)*)",pid=(\d+)/.exec(ssLine);
  return m ? { pid: Number(m[2]), name: m[1] } : undefined;
}

/** Shell that sets `own` to the running own processes' pids (space-separated), or to "" when none runs. */
function ownPidLine(own: OwnProcess | undefined): string {
  if (own === undefined) return `own=""`;
  if ("pidFile" in own) return `own=$(live_pid ${shq(own.pidFile)} || true)`;
  if ("pidFiles" in own) return `own=$({ ${own.pidFiles.map((f) => `live_pid ${shq(f)} || true`).join("; ")}; } 2>/dev/null | tr '\\n' ' ' | sed 's/ *$//')`;
  return `own=$(docker inspect -f '{{if .State.Running}}{{.State.Pid}}{{end}}' ${shq(own.container)} 2>/dev/null || true)`;
}

/**
 * Shell lines that end the script with the refusal when the port has a listener other than the service's
 * own process: every listener on the port is judged (another may hold the same port on another address).
 * The owner's command line comes from /proc/<pid>/cmdline (cut to 200 characters); without a pid, the
 * listener's address stands in. A container's process usually runs as another user, whose pid a login
 * without privilege cannot see: while the own container runs, such a listener is taken for it (the start
 * script's own check, once the container is gone, still names any other).
 */
export function refuseTakenPortLines(t: TakenPort): string {
  const owner = "$owner";
  const [before, after] = takenPortMessage(t, owner).split(owner) as [string, string];
  const unnamedMayBeOurs = t.own !== undefined && "container" in t.own;
  return `listeners=""
if command -v ss >/dev/null 2>&1; then listeners=$(ss -Hltnp "sport = :${t.port}" 2>/dev/null || true); fi
if [ -n "$listeners" ]; then
  ${ownPidLine(t.own).replace(/\n/g, "\n  ")}
  owner=$(printf '%s\\n' "$listeners" | while IFS= read -r line; do
    pid=$(printf '%s\\n' "$line" | sed -n 's/.*users:(("[^"]*",pid=\\([0-9][0-9]*\\).*/\\1/p')
    if [ -z "$pid" ]; then
      ${unnamedMayBeOurs ? `[ -n "$own" ] && continue` : ":"}
      printf 'a listener this login cannot name (%s)\\n' "$(printf '%s\\n' "$line" | tr -s ' ' | cut -c1-120)"
      break
    fi
    if [ -n "$own" ]; then
      pgid=$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ')
      case " $own " in *" $pid "*|*" \${pgid:-none} "*) continue ;; esac
    fi
    cmd=$({ tr '\\000' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null | cut -c1-200 | sed 's/ *$//')
    printf 'pid %s (%s)\\n' "$pid" "\${cmd:-command line not readable}"
    break
  done)
  if [ -n "$owner" ]; then
    printf '%s%s%s\\n' ${shq(before)} "$owner" ${shq(after)} >&2
    exit 1
  fi
fi`;
}

/**
 * The check run before anything stops the serving process to replace it: it refuses when the port is held
 * by anything but that process, so a refusal leaves the service serving. Prints `free` otherwise.
 */
export function portCheckScript(t: TakenPort & { readonly own: OwnProcess }): string {
  return `set -eu
${"container" in t.own ? "" : PID_FILE_SH}${refuseTakenPortLines(t)}
echo free
`;
}
