/**
 * Failed attempts kept on the host (the runbook: "retain the failed attempt's evidence"). A step run as a
 * remote command cannot write a record on this machine when it fails, so its script keeps the evidence
 * beside what it ran, and the next successful run's record lists it:
 *
 *   <folder>/attempts/<start time>-<shell pid>/
 *     started-at, ended-at   UTC times of the attempt
 *     exit-status            the failed command's exit status (empty when a signal or a deadline ended it)
 *     reason                 the script's own one-line account of the failure
 *     command                the command line it ran (no secret: keys travel in env files)
 *     <log files>            moved there, never copied over: the next attempt writes fresh ones
 *
 * A folder is written once and never removed by a retry, a stop or a recovery; it goes with the stack's
 * folder on the host when the stack is destroyed (hosts[].retainOnDestroy keeps it).
 */
import { shq } from "../shell";

/** The folder holding one subfolder per kept attempt, under a run or install folder. */
export const ATTEMPTS_DIR = "attempts";

/** Bytes of each log kept in a listing (the log itself stays whole on the host). */
export const ATTEMPT_LOG_TAIL_BYTES = 64 * 1024;

/** The marker word of one listed attempt on a script's stdout. */
export const ATTEMPT_LINE = "narwhal-failed-attempt";

/**
 * Shell functions:
 * - `keep_attempt DIR STARTED STATUS REASON COMMAND FILE...`: makes `DIR/<start>-<pid>` and moves each
 *   FILE that exists into it; sets `kept_attempt` to the folder.
 * - `list_attempts DIR LOG`: one line per kept attempt: the marker word, the folder's name, exit status,
 *   start, end, then reason, command and the tail of LOG, each base64 (`-` when empty).
 */
export const ATTEMPTS_SH = `keep_attempt() {
  ka_root=$1; ka_started=$2; ka_status=$3; ka_reason=$4; ka_command=$5; shift 5
  ka_base="$ka_root/$(printf '%s' "$ka_started" | tr -d ':-')-$$"
  kept_attempt=$ka_base; ka_n=0
  # One script may keep several (each container of a failed start): never into a folder already kept.
  while [ -e "$kept_attempt" ]; do ka_n=$((ka_n + 1)); kept_attempt="$ka_base.$ka_n"; done
  mkdir -p "$kept_attempt" && chmod 700 "$ka_root" "$kept_attempt" || return 0
  printf '%s\\n' "$ka_started" > "$kept_attempt/started-at"
  date -u +%Y-%m-%dT%H:%M:%SZ > "$kept_attempt/ended-at"
  printf '%s\\n' "$ka_status" > "$kept_attempt/exit-status"
  printf '%s\\n' "$ka_reason" > "$kept_attempt/reason"
  printf '%s\\n' "$ka_command" > "$kept_attempt/command"
  for ka_file in "$@"; do
    if [ -e "$ka_file" ]; then mv -f "$ka_file" "$kept_attempt/"; fi
  done
  echo "the failed attempt's evidence is kept in $kept_attempt" >&2
}
ka_b64() { ka_v=$(base64 -w0 < "$1" 2>/dev/null || true); printf '%s' "\${ka_v:--}"; }
list_attempts() {
  for la_dir in "$1"/*/; do
    [ -f "$la_dir/exit-status" ] || continue
    la_status=$(tr -dc '0-9' < "$la_dir/exit-status")
    la_log=$( (tail -c ${ATTEMPT_LOG_TAIL_BYTES} "$la_dir/$2" 2>/dev/null || true) | base64 -w0)
    printf '${ATTEMPT_LINE} %s %s %s %s %s %s %s\\n' "$(basename "$la_dir")" "\${la_status:--}" \\
      "$(tr -dc '0-9TZ:.-' < "$la_dir/started-at")" "$(tr -dc '0-9TZ:.-' < "$la_dir/ended-at")" \\
      "$(ka_b64 "$la_dir/reason")" "$(ka_b64 "$la_dir/command")" "\${la_log:--}"
  done
}
`;

/** The shell line that lists the kept attempts of `folder` (whose log file is `logName`). */
export function listAttemptsScript(folder: string, logName: string): string {
  return `${ATTEMPTS_SH}list_attempts ${shq(`${folder.replace(/\/+$/, "")}/${ATTEMPTS_DIR}`)} ${shq(logName)}\n`;
}

/** One kept failed attempt as a listing reports it. */
export interface KeptAttempt {
  /** The attempt's folder name under `attempts/`. */
  readonly id: string;
  readonly exitStatus: number | null;
  readonly startedAt: string;
  readonly endedAt: string;
  readonly reason: string;
  readonly command: string;
  /** The log's last {@link ATTEMPT_LOG_TAIL_BYTES} bytes. */
  readonly logTail: string;
}

const decode = (field: string): string => (field === "-" ? "" : Buffer.from(field, "base64").toString("utf8").replace(/\n$/, ""));

/** ISO 8601 UTC with milliseconds, as evidence records take it; the host's seconds-precision time otherwise unchanged. */
function isoTime(t: string): string {
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? new Date(0).toISOString() : new Date(ms).toISOString();
}

/** The attempts listed on a script's stdout, in the order listed; other lines are ignored. */
export function parseKeptAttempts(stdout: string): KeptAttempt[] {
  const kept: KeptAttempt[] = [];
  for (const line of stdout.split("\n")) {
    const f = line.trim().split(" ");
    if (f[0] !== ATTEMPT_LINE || f.length !== 8) continue;
    const status = f[2] === "-" ? null : Number(f[2]);
    kept.push({
      id: f[1],
      exitStatus: status !== null && Number.isInteger(status) && status >= 0 && status <= 255 ? status : null,
      startedAt: isoTime(f[3]),
      endedAt: isoTime(f[4]),
      reason: decode(f[5]),
      command: decode(f[6]),
      logTail: decode(f[7]),
    });
  }
  return kept;
}

/** A step's stdout without the listed attempts (what the step itself printed). */
export function withoutKeptAttempts(stdout: string): string {
  return stdout
    .split("\n")
    .filter((l) => !l.startsWith(`${ATTEMPT_LINE} `))
    .join("\n");
}
