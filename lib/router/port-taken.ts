/**
 * The refusal a start script prints when its port already has a listener on the router host: one line
 * naming the host, the port, the owning process (pid and command line, from `ss -Hltnp` and /proc) and
 * the fix. It is the script's last line on stderr, which the command provider puts first in its error.
 */
import { shq } from "../shell";

export interface TakenPort {
  /** What wanted the port: `router`, `prometheus`, `grafana`. */
  readonly what: string;
  readonly port: number;
  /** The config key that chooses the port (`router.port`, `observability.prometheusPort`). */
  readonly configKey: string;
  /** The host's alias in the fleet config; absent: "this host". */
  readonly hostAlias?: string;
  /**
   * A pid file of ours (the running router's): a listener in that process group is the one the
   * replacement takes over, not a conflict.
   */
  readonly ownPidFile?: string;
}

/** The refusal, given the owner the shell found (`pid 1234 (python3 -m http.server 8921)`). */
export function takenPortMessage(t: TakenPort, owner: string): string {
  const where = t.hostAlias ? `host ${t.hostAlias}` : "this host";
  return `${t.what}: port ${t.port} on ${where} is taken by ${owner}; stop that process or set ${t.configKey} to a free port, then run pulumi up again`;
}

/**
 * The owner of a port as `ss -Hltnp` prints it (`users:(("python3",pid=1234,fd=3))`): its first pid and
 * name, or undefined when the line names none (another user's process seen without privilege).
 */
export function ownerFromSs(ssOutput: string): { pid: number; name: string } | undefined {
  const m = /users:\(\("((?:[^"\\]|\\.)*)",pid=(\d+)/.exec(ssOutput);
  return m ? { pid: Number(m[2]), name: m[1]! } : undefined;
}

/**
 * Shell lines that end the script with the refusal when the port has a listener. The owner's command line
 * comes from /proc/<pid>/cmdline (cut to 200 characters); without a pid, the listener's address stands in.
 */
export function refuseTakenPortLines(t: TakenPort): string {
  const owner = "$owner";
  const [before, after] = takenPortMessage(t, owner).split(owner) as [string, string];
  return `listeners=""
if command -v ss >/dev/null 2>&1; then listeners=$(ss -Hltnp "sport = :${t.port}" 2>/dev/null || true); fi
if [ -n "$listeners" ]; then
  pid=$(printf '%s\\n' "$listeners" | sed -n 's/.*users:(("[^"]*",pid=\\([0-9][0-9]*\\).*/\\1/p' | head -n 1)
  own=""
  ${t.ownPidFile ? `own=$(cat ${shq(t.ownPidFile)} 2>/dev/null || true)` : ""}
  if [ -n "$own" ] && [ -n "$pid" ] && { [ "$pid" = "$own" ] || [ "$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ')" = "$own" ]; }; then
    listeners=""
  fi
fi
if [ -n "$listeners" ]; then
  if [ -n "$pid" ]; then
    cmd=$(tr '\\000' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-200 | sed 's/ *$//')
    owner="pid $pid (\${cmd:-command line not readable})"
  else
    owner="a listener this login cannot name ($(printf '%s\\n' "$listeners" | head -n 1 | tr -s ' ' | cut -c1-120))"
  fi
  printf '%s%s%s\\n' ${shq(before)} "$owner" ${shq(after)} >&2
  exit 1
fi`;
}
