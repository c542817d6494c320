import type { LaunchPlan } from "../launch/plan";

/** The GPU indices an engine's plan makes visible to it (none on a host without GPUs). */
export function planGpus(plan: Pick<LaunchPlan, "env">): number[] {
  const visible = plan.env.CUDA_VISIBLE_DEVICES ?? plan.env.HIP_VISIBLE_DEVICES ?? "";
  return visible.split(",").filter((g) => /^\d+$/.test(g)).map(Number);
}

/**
 * Runbook: start engines with disjoint GPUs concurrently, serialise those that share one. Pulumi may
 * start an engine while another that held its GPU (before a reallocation) is still stopping, so the
 * start itself waits, under a lock on the stack's engine folders, until no live engine of the stack on
 * this machine claims any of its GPUs, then records its own claim beside its pid. A claim names its
 * machine (machine-id) because the folders of several hosts may sit on one shared filesystem.
 * Bounded: the error names the engine still holding the GPU. Leaves fd 9 locked; the caller releases it once its pid is
 * written (`release_gpu_claim`).
 */
export function gpuClaimScript(plan: Pick<LaunchPlan, "engineId" | "env">, waitS: number): string {
  const gpus = planGpus(plan);
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
    [ -f "$other/pid" ] && kill -0 "$(cat "$other/pid")" 2>/dev/null || continue
    for g in $(cat "$other/gpus" 2>/dev/null); do
      case "$gpus" in *" $g "*) holder="engine $(basename "$other") (pid $(cat "$other/pid")) holds GPU $g" ;; esac
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
