import { shq } from "./shell";

/**
 * Shell lines that wait, bounded by `timeoutS`, until `url` answers; while waiting, a process that is no
 * longer `alive` or a passed deadline prints what happened and `logs`, runs `cleanup` and exits 1.
 */
export function readyWait(url: string, what: string, timeoutS: number, alive: string, logs: string, cleanup: string): string {
  return `deadline=$(( $(date +%s) + ${timeoutS} ))
until curl -fsS -o /dev/null --max-time 2 ${shq(url)} 2>/dev/null; do
  if ! ${alive}; then
    echo ${shq(`${what} exited before ${url} answered; last log lines:`)} >&2
    ${logs}
    ${cleanup}
    exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo ${shq(`${what} did not answer ${url} within ${timeoutS}s; stopped it. Last log lines:`)} >&2
    ${logs}
    ${cleanup}
    exit 1
  fi
  sleep 0.3
done`;
}
