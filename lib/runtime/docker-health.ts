/**
 * The @pulumi/docker backend's wait for `/health` (components/runtime/docker.ts), run on the engine's host
 * once its Container is created. The provider's own wait cannot keep anything: it gives up with the
 * container left behind, and whatever touches that container next (the provider's refresh of a stopped
 * `mustRun` container, a replacement, a destroy) removes it with its log. So the wait is this script: a
 * container that exits first, or a deadline, keeps the container's `docker logs` and `docker inspect` in
 * the run folder's `attempts/` (./container-attempt.ts) before the error, where no retry looks to remove it.
 */
import type { LaunchPlan } from "../launch/plan";
import { shq } from "../shell";
import { keepContainerRunSh, type ContainerAttemptOptions } from "./container-attempt";

export interface DockerHealthOptions extends ContainerAttemptOptions {
  /** `runtime.deadlinesS.start`: the bound of the whole wait. */
  readonly startS: number;
  /** What created the container, as its kept attempt names it (no secret: the key is in its environment). */
  readonly command: string;
}

/** Waits for the plan's `/health` while the container runs; prints the container id when it answers. */
export function dockerHealthWaitScript(plan: LaunchPlan, containerId: string, o: DockerHealthOptions): string {
  if (!/^[0-9a-f]{64}$/.test(containerId)) throw new Error(`engine ${plan.engineId}: container ID ${JSON.stringify(containerId)} is not 64 hex digits`);
  if (!Number.isInteger(o.startS) || o.startS <= 0) throw new Error(`engine ${plan.engineId}: runtime.deadlinesS.start must be a positive whole number of seconds, got ${o.startS}`);
  const dk = `timeout -k 5 ${o.inspectS} ${shq(o.dockerCommand)}`;
  const again = "a later `pulumi up --refresh` lets the docker provider see the stopped container and start a new one";
  return `set -eu
umask 077
${keepContainerRunSh(o)}cid=${containerId}
command=${shq(o.command)}
deadline=$(( $(date +%s) + ${o.startS} ))
until curl -fsS -o /dev/null --max-time 2 ${shq(`${plan.url}/health`)} 2>/dev/null; do
  state=$(${dk} inspect --format '{{.State.Status}} (exit code {{.State.ExitCode}})' "$cid" 2>/dev/null) || {
    echo "engine ${plan.engineId}: could not inspect container $cid while waiting for /health (runtime.deadlinesS.inspect ${o.inspectS}s)" >&2
    exit 1
  }
  case $state in
    running*) ;;
    *)
      echo "engine ${plan.engineId}: container $cid is $state before answering /health; last log lines:" >&2
      ${dk} logs --tail 20 "$cid" >&2 2>&1 || true
      keep_container_run "$cid" '' "engine ${plan.engineId}: container $cid is $state before answering /health" "$command"
      echo ${shq(`engine ${plan.engineId}: ${again}`)} >&2
      exit 1 ;;
  esac
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "engine ${plan.engineId}: container $cid did not answer /health within the start deadline of ${o.startS}s (runtime.deadlinesS.start); last log lines:" >&2
    ${dk} logs --tail 20 "$cid" >&2 2>&1 || true
    keep_container_run "$cid" '' "engine ${plan.engineId}: container $cid did not answer /health within the start deadline of ${o.startS}s" "$command"
    exit 1
  fi
  sleep 0.5
done
printf '%s\\n' "$cid"
`;
}
