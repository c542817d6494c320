/**
 * A failed run of a container the docker CLI does not remove itself: an in-place `docker restart` of the
 * peer restart wave (lib/runtime/restart.ts), and the @pulumi/docker backend's wait for `/health`
 * (components/runtime/docker.ts). Either way the container stays, but the next thing to touch it (the
 * wave's next restart, a refresh, a replacement) restarts or removes it, and its log with it: its
 * `docker logs` and `docker inspect` are kept first, as a failed attempt (./attempts.ts) of the run folder.
 */
import { shq } from "../shell";
import { ATTEMPTS_DIR, ATTEMPTS_SH } from "./attempts";
import { ATTEMPT_FILES, RUN_FILES } from "./docker-cli";

/** Beside `engine.log` and `inspect.json`: the container's id and `State.StartedAt`, so a run is kept once. */
export const CONTAINER_RUN_FILE = "container-run";

export interface ContainerAttemptOptions {
  /** The docker client on the host (`runtime.dockerCommand`). */
  readonly dockerCommand: string;
  /** Every docker call here is bounded by `runtime.deadlinesS.inspect`. */
  readonly inspectS: number;
  /** The engine's run folder, absolute: the attempt goes to its `attempts/`. */
  readonly runDir: string;
}

/**
 * Shell lines defining `keep_container_run ID SINCE REASON COMMAND` (with {@link ATTEMPTS_SH}): keeps the
 * container's `docker logs` (from SINCE, a time `docker logs --since` takes, or the whole log when empty),
 * its `docker inspect` and its exit code (empty while it still runs) in `<runDir>/attempts/<start>-<pid>/`.
 * A run already kept (same id and `State.StartedAt`: a retry of the same wait) is named, not kept twice.
 * Sets `attempt_started` to now: call {@link startAttemptLine} again where the attempt really starts.
 */
export function keepContainerRunSh(o: ContainerAttemptOptions): string {
  if (!o.runDir.startsWith("/")) throw new Error(`container attempt: run dir ${JSON.stringify(o.runDir)} must be an absolute path`);
  if (!Number.isInteger(o.inspectS) || o.inspectS <= 0) throw new Error(`container attempt: runtime.deadlinesS.inspect must be a positive whole number of seconds, got ${o.inspectS}`);
  const dk = `timeout -k 5 ${o.inspectS} ${shq(o.dockerCommand)}`;
  return `${ATTEMPTS_SH}kc_run=${shq(o.runDir)}
${startAttemptLine()}
keep_container_run() {
  kc_id=$1; kc_since=$2; kc_reason=$3; kc_command=$4
  kc_key="$kc_id $(${dk} inspect --format '{{.State.StartedAt}}' "$kc_id" 2>/dev/null || true)"
  for kc_seen in "$kc_run/${ATTEMPTS_DIR}"/*/${CONTAINER_RUN_FILE}; do
    if [ -f "$kc_seen" ] && [ "$(cat "$kc_seen")" = "$kc_key" ]; then
      echo "this run of container $kc_id is already kept in $(dirname "$kc_seen")" >&2
      return 0
    fi
  done
  mkdir -p "$kc_run" && chmod 700 "$kc_run" || return 0
  kc_tmp="$kc_run/.attempt.$$"
  mkdir -p "$kc_tmp" || return 0
  if [ -n "$kc_since" ]; then
    ${dk} logs --since "$kc_since" "$kc_id" > "$kc_tmp/${RUN_FILES.log}" 2>&1 || true
  else
    ${dk} logs "$kc_id" > "$kc_tmp/${RUN_FILES.log}" 2>&1 || true
  fi
  ${dk} inspect "$kc_id" > "$kc_tmp/${ATTEMPT_FILES.inspect}" 2>/dev/null || true
  printf '%s\\n' "$kc_key" > "$kc_tmp/${CONTAINER_RUN_FILE}"
  # The container's own exit code when it exited; none while it still runs (a deadline ended the wait).
  kc_state=$(${dk} inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$kc_id" 2>/dev/null) || kc_state=
  case $kc_state in "exited "*) kc_status=\${kc_state#exited } ;; *) kc_status= ;; esac
  keep_attempt "$kc_run/${ATTEMPTS_DIR}" "$attempt_started" "$kc_status" "$kc_reason" "$kc_command" \\
    "$kc_tmp/${RUN_FILES.log}" "$kc_tmp/${ATTEMPT_FILES.inspect}" "$kc_tmp/${CONTAINER_RUN_FILE}"
  rmdir "$kc_tmp" 2>/dev/null || true
}
`;
}

/** Marks the start of the attempt a later `keep_container_run` keeps (UTC, as `docker logs --since` takes it). */
export function startAttemptLine(): string {
  return "attempt_started=$(date -u +%Y-%m-%dT%H:%M:%SZ)";
}
