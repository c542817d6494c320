/**
 * Pid files that name their process and nobody else. A pid file outlives its process (a host reboot, a
 * `kill -9`, an engine that crashed) and the kernel soon hands the number to another process: on a
 * machine with the default `pid_max` of 32768, within minutes. Trusting the number alone, a stop would
 * signal that stranger's process group and a start would refuse to run beside it. So each pid file the
 * program writes has a companion, `<file>.start`: the pid with the boot id and the clock tick the process
 * started at (`/proc/<pid>/stat` field 22), which no other process of any boot shares.
 *
 * A pid file the companion does not describe (written by an older version, or by an operator's own
 * restart) is trusted while its pid is alive, as it always was: an upgrade or a restart by hand neither
 * orphans nor refuses what runs.
 */
import { shq } from "./shell";

/**
 * Shell functions, defined once at the top of a script that uses them:
 * - `start_of_pid PID`: prints "<boot id> <start tick>" while PID runs (not a zombie); fails otherwise.
 * - `record_pid PID FILE`: writes FILE, then FILE.start ("PID <boot id> <start tick>"). In that order a
 *   start cut short between the two leaves a new pid without its record, trusted while alive, never an
 *   old pid beside a record that would vouch for it.
 * - `live_pid FILE`: prints the pid FILE names while that very process runs; fails otherwise.
 * - `forget_pid FILE`: removes FILE and its record.
 * - `stop_group PID WHAT TIMEOUT_S`: SIGTERM (and SIGCONT, since a stopped process acts on SIGTERM only
 *   once continued) to the process group PID leads, then waits while that same process runs; SIGKILL
 *   once TIMEOUT_S has passed, saying "WHAT ignored SIGTERM". Returns once it is over, a zombie included:
 *   a zombie holds no port, GPU or file.
 */
export const PID_FILE_SH = `start_of_pid() {
  _sp_stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  set -- \${_sp_stat##*) }
  case "$1" in Z|X) return 1 ;; esac
  printf '%s %s\\n' "$(cat /proc/sys/kernel/random/boot_id)" "\${20}"
}
record_pid() {
  printf '%s\\n' "$1" > "$2"
  printf '%s %s\\n' "$1" "$(start_of_pid "$1" || echo gone)" > "$2.start"
}
live_pid() {
  _lp=$(cat "$1" 2>/dev/null) || return 1
  case "$_lp" in ''|*[!0-9]*) return 1 ;; esac
  _lp_rec=$(cat "$1.start" 2>/dev/null) || _lp_rec=
  if [ "\${_lp_rec%% *}" = "$_lp" ]; then
    [ "$_lp_rec" = "$_lp $(start_of_pid "$_lp")" ] || return 1
  else
    kill -0 "$_lp" 2>/dev/null || return 1
  fi
  printf '%s\\n' "$_lp"
}
forget_pid() { rm -f "$1" "$1.start"; }
stop_group() {
  _sg_start=$(start_of_pid "$1") || return 0
  kill -TERM "-$1" 2>/dev/null || kill -TERM "$1" 2>/dev/null || true
  kill -CONT "-$1" 2>/dev/null || kill -CONT "$1" 2>/dev/null || true
  _sg_deadline=$(( $(date +%s) + $3 ))
  while [ "$(start_of_pid "$1")" = "$_sg_start" ]; do
    if [ "$(date +%s)" -ge "$_sg_deadline" ]; then
      echo "$2 ignored SIGTERM for $3s; sending SIGKILL" >&2
      kill -KILL "-$1" 2>/dev/null || kill -KILL "$1" 2>/dev/null || true
      sleep 0.5
      return 0
    fi
    sleep 0.2
  done
}
`;

/**
 * Shell lines that stop the process group whose leader the pid file names, when that process still runs
 * (`stop_group`). `pidFileWord` is a shell word (`"$run/pid"`). Expects {@link PID_FILE_SH} to be defined.
 * Removes nothing.
 */
export function stopPidFileLines(what: string, pidFileWord: string, stopTimeoutS: number): string {
  return `if pid=$(live_pid ${pidFileWord}); then stop_group "$pid" ${shq(what)} ${stopTimeoutS}; fi`;
}
