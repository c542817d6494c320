/**
 * Restart scripts for the peer restart wave (lib/engine/peer-wave.ts): each stops one running engine and
 * starts the same plan again, then waits (bounded) for `/health`. The engine's private env file, GPU
 * claims and container stay as its start left them, so no secret passes through a restart.
 */
import type { LaunchPlan } from "../launch/plan";
import { shq } from "../shell";
import { PID_FILE_SH, stopPidFileLines } from "../pid-file";
import { keepLine, launchLines } from "./native";
import { ATTEMPTS_SH } from "./attempts";
import { keepContainerRunSh } from "./container-attempt";

export interface RestartDeadlinesS {
  readonly stop: number;
  readonly health: number;
}

/** `keep(reason)`: shell lines that keep the failed restart's evidence before the script exits (native: its log). */
function healthWait(plan: LaunchPlan, healthTimeoutS: number, alive: string, keep: (reason: string, exited: boolean) => string = () => ":"): string {
  const exited = `engine ${plan.engineId} exited after its restart, before answering /health`;
  const late = `engine ${plan.engineId} did not answer /health within health timeout ${healthTimeoutS}s of its restart`;
  return `deadline=$(( $(date +%s) + ${healthTimeoutS} ))
until curl -fsS -o /dev/null --max-time 2 ${shq(`${plan.url}/health`)} 2>/dev/null; do
  ${alive} || { echo "${exited}" >&2; ${keep(exited, true)}; exit 1; }
  [ "$(date +%s)" -lt "$deadline" ] || { echo "${late}" >&2; ${keep(late, false)}; exit 1; }
  sleep 0.3
done`;
}

/** A native engine: its process group stops, and the same argv starts from its run folder. */
export function nativeRestartScript(plan: LaunchPlan, runDir: string, d: RestartDeadlinesS): string {
  return `set -eu
${PID_FILE_SH}run=${shq(runDir)}
[ -f "$run/pid" ] && [ -f "$run/engine.env" ] ||
  { echo "engine ${plan.engineId}: nothing to restart in $run (no pid or env file); run pulumi up to start it" >&2; exit 1; }
${stopPidFileLines(`engine ${plan.engineId}`, '"$run/pid"', d.stop)}
${ATTEMPTS_SH}attempt_started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
${launchLines(plan)}
${healthWait(plan, d.health, `kill -0 "$pid" 2>/dev/null`, (reason, exited) =>
    // A late engine still runs (the wave decides what to do with it): its log is copied, not moved, and has no status yet.
    exited ? `status=0; wait "$pid" 2>/dev/null || status=$?; ${keepLine(plan, '"$status"', reason)}` : `${keepLine(plan, "''", reason, "copy")}`)}
printf '{"pid":%s,"startedAt":"%s"}\\n' "$pid" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$run/started"
cat "$run/started"
`;
}

/** Where a container's failed restart is kept: its run folder, and the bound of each docker call that keeps it. */
export interface ContainerRestartKeep {
  readonly runDir: string;
  readonly inspectS: number;
}

/**
 * A container engine: `docker restart` keeps its id, environment and devices; only the process is new. The
 * container's log spans all its runs, so a failed restart keeps `docker logs --since` the restart began, with
 * its `docker inspect`, in the run folder's `attempts/` (./container-attempt.ts): the wave's next restart of
 * the same container would otherwise bury it, and a replacement remove it.
 */
export function containerRestartScript(plan: LaunchPlan, docker: string, container: string, d: RestartDeadlinesS, keep: ContainerRestartKeep): string {
  const dk = shq(docker);
  const id = shq(container);
  const command = `${docker} restart --time ${d.stop} ${container}`;
  return `set -eu
umask 077
${keepContainerRunSh({ dockerCommand: docker, inspectS: keep.inspectS, runDir: keep.runDir })}timeout -k 5 ${d.stop + keep.inspectS} ${dk} restart --time ${d.stop} ${id} > /dev/null || {
  st=$?
  echo "engine ${plan.engineId}: docker restart of container ${container} failed (exit $st)" >&2
  keep_container_run ${id} "$attempt_started" ${shq(`engine ${plan.engineId}: docker restart failed`)} ${shq(command)}
  exit 1
}
${healthWait(plan, d.health, `[ "$(timeout -k 5 ${keep.inspectS} ${dk} inspect --format '{{.State.Running}}' ${id} 2>/dev/null)" = true ]`, (reason) => `keep_container_run ${id} "$attempt_started" ${shq(reason)} ${shq(command)}`)}
`;
}
