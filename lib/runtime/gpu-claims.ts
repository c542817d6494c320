import { shq } from "../shell";
import type { LaunchPlan } from "../launch/plan";

/**
 * Runbook: start engines with disjoint GPUs concurrently, serialise those that share one. Pulumi may
 * start an engine while another that held its GPU (before a reallocation) is still stopping, so the
 * start itself waits, under a lock on the stack's engine folders, until no live engine of the stack on
 * this machine claims any of its GPUs, then records its own claim beside its pid. A claim names its
 * machine (machine-id) because the folders of several hosts may sit on one shared filesystem.
 * Bounded: the error names the engine still holding the GPU. Leaves fd 9 locked; the caller releases it once its pid is
 * written (`release_gpu_claim`). Expects `PID_FILE_SH` (lib/pid-file.ts) to be defined.
 */
export function gpuClaimScript(plan: Pick<LaunchPlan, "engineId" | "placement">, waitS: number): string {
  const gpus = plan.placement.gpuIds;
  if (gpus.length === 0) return "release_gpu_claim() { :; }\n";
  return `gpus=' ${gpus.join(" ")} '
machine=$(cat /etc/machine-id 2>/dev/null || hostname)
exec 9>"$run/../.gpu-claims.lock"
claim_deadline=$(( $(date +%s) + ${waitS} ))
while :; do
  flock 9
  holder=
  for other in "$run"/../*/; do
    other=\${other%/}
    [ "$(basename "$other")" = "$(basename "$run")" ] && continue
    [ "$(cat "$other/machine" 2>/dev/null)" = "$machine" ] || continue
    other_pid=$(live_pid "$other/pid") || continue
    for g in $(cat "$other/gpus" 2>/dev/null); do
      case "$gpus" in *" $g "*) holder="engine $(basename "$other") (pid $other_pid) holds GPU $g" ;; esac
    done
  done
  [ -z "$holder" ] && break
  flock -u 9
  if [ "$(date +%s)" -ge "$claim_deadline" ]; then
    echo "engine ${plan.engineId}: GPU wait deadline ${waitS}s passed and $holder; stop that engine or give the engines disjoint engines[].gpuIds" >&2
    exit 1
  fi
  sleep 0.5
done
printf '%s\\n' "$gpus" > "$run/gpus"
printf '%s\\n' "$machine" > "$run/machine"
release_gpu_claim() { flock -u 9; exec 9>&-; }
`;
}

/**
 * The same rule on a Docker host, where the daemon is the record: each engine container carries its
 * host GPU ids in the `gpus` label (lib/runtime/container-spec.ts), and a start waits, bounded, until
 * no running container of another engine of the stack lists one of its GPUs. Expects `$docker` (the
 * docker command) to be set; every docker call is bounded by `inspectS`.
 */
export function dockerGpuWaitScript(
  plan: Pick<LaunchPlan, "engineId" | "placement">,
  o: { stack: string; waitS: number; inspectS: number; stackLabel: string; engineLabel: string; gpusLabel: string },
): string {
  // A container on a host without GPUs (vendor "none") is given none and labels none: nothing to wait for.
  const gpus = plan.placement.vendor === "none" ? [] : plan.placement.gpuIds;
  if (gpus.length === 0) return "";
  const engineId = plan.engineId;
  return `gpus=' ${gpus.join(" ")} '
gpu_deadline=$(( $(date +%s) + ${o.waitS} ))
while :; do
  holders=$(timeout -k 5 ${o.inspectS} "$docker" ps --no-trunc --filter ${shq(`label=${o.stackLabel}=${o.stack}`)} --format ${shq(`{{.Label "${o.engineLabel}"}} {{.Label "${o.gpusLabel}"}} {{.ID}}`)}) || {
    echo "engine ${engineId}: could not list the running containers of stack ${o.stack} to check its GPUs are free" >&2; exit 1; }
  holder=
  while read -r h_engine h_gpus h_id; do
    [ -n "$h_engine" ] && [ "$h_engine" != ${shq(engineId)} ] || continue
    for g in $(printf '%s' "$h_gpus" | tr ',' ' '); do
      case "$gpus" in *" $g "*) holder="engine $h_engine (container $h_id) holds GPU $g" ;; esac
    done
  done <<EOF_HOLDERS
$holders
EOF_HOLDERS
  [ -z "$holder" ] && break
  if [ "$(date +%s)" -ge "$gpu_deadline" ]; then
    echo "engine ${engineId}: GPU wait deadline ${o.waitS}s passed and $holder; stop that engine or give the engines disjoint engines[].gpuIds" >&2
    exit 1
  fi
  sleep 0.5
done
`;
}
