import { shellLine, shq } from "../shell";
import type { LaunchPlan } from "../launch/plan";
import { recoveryHintScript } from "./recovery";
import { gpuClaimScript } from "./gpu-claims";

/**
 * Shell scripts that run an engine as a native process on its host. They are the `create` and
 * `delete` of a remote command, so they must be safe to run again after an interruption: start
 * refuses a second live process for the same engine, stop succeeds when nothing is running.
 */
export interface NativeRuntimeOptions {
  /** Per-engine folder on the host (0700): pid, launch.json, log, and the private env file. */
  readonly runDir: string;
  /** Bounded wait for `/health` after start; the error names it. */
  readonly healthTimeoutS: number;
  readonly stopTimeoutS: number;
  /** Bounded wait for another engine of the stack to release a GPU this one needs. */
  readonly gpuWaitS?: number;
}

/**
 * Starts the engine detached from the SSH session, then waits for `/health`. Reads the private env file
 * (with the API key) from stdin, so the key is never on a command line or in a process listing.
 * Prints one JSON line: `{"pid": N, "startedAt": "<ISO time>"}`.
 */
export function startScript(plan: LaunchPlan, opts: NativeRuntimeOptions): string {
  const run = shq(opts.runDir);
  const health = shq(`${plan.url}/health`);
  return `set -eu
run=${run}
mkdir -p "$run" && chmod 700 "$run"
umask 077
cat > "$run/engine.env"
printf '%s\\n' ${shq(JSON.stringify(plan))} > "$run/launch.json"
if [ -f "$run/pid" ] && kill -0 "$(cat "$run/pid")" 2>/dev/null; then
  # A start interrupted after launching: adopt the process if it runs this very plan, never start twice.
  if [ "$(cat "$run/plan.sha256" 2>/dev/null)" = ${shq(plan.planSha256)} ] && [ -f "$run/started" ]; then
    cat "$run/started"
    exit 0
  fi
  echo "engine ${plan.engineId}: pid $(cat "$run/pid") already runs another launch plan in $run; stop it first" >&2
  exit 1
fi
${gpuClaimScript(plan, opts.gpuWaitS ?? opts.stopTimeoutS + opts.healthTimeoutS)}(
  exec 9>&-
  set -a; . "$run/engine.env"; set +a
  cd "$run"
  exec env ${shellLine(Object.entries(plan.env).map(([k, v]) => `${k}=${v}`))} setsid ${shellLine(plan.argv)} > "$run/engine.log" 2>&1 < /dev/null
) &
pid=$!
echo "$pid" > "$run/pid"
printf '%s\\n' ${shq(plan.planSha256)} > "$run/plan.sha256"
release_gpu_claim
deadline=$(( $(date +%s) + ${opts.healthTimeoutS} ))
until curl -fsS -o /dev/null --max-time 2 ${health} 2>/dev/null; do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "engine ${plan.engineId} exited before answering /health; last log lines:" >&2
    tail -n 20 "$run/engine.log" >&2
${recoveryHintScript()}
    rm -f "$run/pid" "$run/plan.sha256" "$run/engine.env"
    exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "engine ${plan.engineId} did not answer /health within health timeout ${opts.healthTimeoutS}s; stopped it. Last log lines:" >&2
    tail -n 20 "$run/engine.log" >&2
    kill -TERM "-$pid" 2>/dev/null || true
    rm -f "$run/pid" "$run/plan.sha256" "$run/engine.env"
    exit 1
  fi
  sleep 0.3
done
printf '{"pid":%s,"startedAt":"%s"}\\n' "$pid" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$run/started"
cat "$run/started"
`;
}

/** Stops the engine's process group, escalating to SIGKILL after the stop timeout; removes the key file. */
export function stopScript(plan: LaunchPlan, opts: NativeRuntimeOptions): string {
  const run = shq(opts.runDir);
  return `set -u
run=${run}
rm -f "$run/engine.env"
[ -f "$run/pid" ] || exit 0
pid=$(cat "$run/pid")
kill -TERM "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
deadline=$(( $(date +%s) + ${opts.stopTimeoutS} ))
while kill -0 "$pid" 2>/dev/null; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "engine ${plan.engineId} ignored SIGTERM for ${opts.stopTimeoutS}s; sending SIGKILL" >&2
    kill -KILL "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
    break
  fi
  sleep 0.2
done
rm -f "$run/pid" "$run/plan.sha256" "$run/started" "$run/gpus" "$run/machine"
`;
}
