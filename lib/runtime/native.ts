import { shellLine, shq } from "../shell";
import { PID_FILE_SH, stopPidFileLines } from "../pid-file";
import { launchRecord, type LaunchPlan } from "../launch/plan";
import { recoveryHintScript } from "./recovery";
import { gpuClaimScript } from "./gpu-claims";
import { ATTEMPTS_DIR, ATTEMPTS_SH } from "./attempts";

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
  /** What to do with an engine the runbook's launcher runs for this one (lib/launch/runbook.ts). */
  readonly runbook?: RunbookTakeover;
}

/** A runbook engine to keep (adopt) or to stop before the program's starts (replace). */
export interface RunbookTakeover {
  readonly action: "adopt" | "replace";
  /** The launcher's process-group leader, and its start time (clock ticks after boot) and boot id. */
  readonly pid: number;
  readonly startTicks: number;
  readonly bootId: string;
  /** The launch directory, and (adopt) the launcher's plan hash: recorded with the adoption. */
  readonly run: string;
  readonly runbookPlanSha256?: string;
  /** Why: printed where the operator reads the up's log. */
  readonly reason: string;
}

/** Adopts or stops the runbook's launcher while it still runs (same pid, start tick and boot). Expects {@link PID_FILE_SH}. */
function runbookTakeoverScript(plan: LaunchPlan, t: RunbookTakeover, stopTimeoutS: number): string {
  if (!Number.isInteger(t.pid) || t.pid < 2 || !Number.isInteger(t.startTicks) || !/^[0-9a-f-]+$/.test(t.bootId)) {
    throw new Error(`engine ${plan.engineId}: runbook process identity ${JSON.stringify({ pid: t.pid, startTicks: t.startTicks, bootId: t.bootId })} is malformed`);
  }
  const started = JSON.stringify({ adopted: { launcher: "runbook", run: t.run, planSha256: t.runbookPlanSha256 ?? null } }).slice(1, -1);
  return `rb_pid=${t.pid}
if ! live_pid "$run/pid" >/dev/null; then
  if [ "$(start_of_pid "$rb_pid")" != ${shq(`${t.bootId} ${t.startTicks}`)} ]; then
    echo "engine ${plan.engineId}: the runbook's process $rb_pid is gone; starting the program's engine" >&2
  elif [ ${shq(t.action)} = adopt ]; then
    printf '%s\\n' ${shq(t.reason)} >&2
    record_pid "$rb_pid" "$run/pid"
    printf '%s\\n' ${shq(plan.planSha256)} > "$run/plan.sha256"
    # The process's own start time: boot time plus its start ticks.
    rb_started=$(( $(awk '/^btime/ {print $2}' /proc/stat) + ${t.startTicks} / $(getconf CLK_TCK) ))
    printf '{"pid":%s,"startedAt":"%s",%s}\\n' "$rb_pid" "$(date -u -d "@$rb_started" +%Y-%m-%dT%H:%M:%SZ)" ${shq(started)} > "$run/started"
    cat "$run/started"
    exit 0
  else
    printf '%s\\n' ${shq(t.reason)} >&2
    stop_group "$rb_pid" "engine ${plan.engineId}: the runbook's process $rb_pid" ${stopTimeoutS}
  fi
fi
`;
}

/**
 * The engine's stdout and stderr, in its run folder: written afresh by each start, read by Gate C's cache
 * capture. A failed start's log is moved into `attempts/` first (./attempts.ts), so no start overwrites it.
 */
export const NATIVE_ENGINE_LOG = "engine.log";

/**
 * Launches the plan detached in its own session from the run folder, its key read from the private env
 * file, and records its pid in `$run/pid`. The GPU-claim lock (fd 9) is not passed on to the engine.
 * Expects `run` to be set and {@link PID_FILE_SH} defined.
 */
export function launchLines(plan: LaunchPlan): string {
  return `(
  exec 9>&-
  set -a; . "$run/engine.env"; set +a
  cd "$run"
  exec env ${shellLine(Object.entries(plan.env).map(([k, v]) => `${k}=${v}`))} setsid ${shellLine(plan.argv)} > "$run/${NATIVE_ENGINE_LOG}" 2>&1 < /dev/null
) &
pid=$!
record_pid "$pid" "$run/pid"`;
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
${PID_FILE_SH}run=${run}
mkdir -p "$run" && chmod 700 "$run"
umask 077
cat > "$run/engine.env"
printf '%s\\n' ${shq(JSON.stringify(launchRecord(plan)))} > "$run/launch.json"
${opts.runbook ? runbookTakeoverScript(plan, opts.runbook, opts.stopTimeoutS) : ""}if running=$(live_pid "$run/pid"); then
  # A start interrupted after launching: adopt the process if it runs this very plan, never start twice.
  if [ "$(cat "$run/plan.sha256" 2>/dev/null)" = ${shq(plan.planSha256)} ] && [ -f "$run/started" ]; then
    cat "$run/started"
    exit 0
  fi
  echo "engine ${plan.engineId}: pid $running already runs another launch plan in $run; stop it first" >&2
  exit 1
fi
${gpuClaimScript(plan, opts.gpuWaitS ?? opts.stopTimeoutS + opts.healthTimeoutS)}${ATTEMPTS_SH}attempt_started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
${launchLines(plan)}
printf '%s\\n' ${shq(plan.planSha256)} > "$run/plan.sha256"
release_gpu_claim
deadline=$(( $(date +%s) + ${opts.healthTimeoutS} ))
until curl -fsS -o /dev/null --max-time 2 ${health} 2>/dev/null; do
  if ! kill -0 "$pid" 2>/dev/null; then
    status=0; wait "$pid" 2>/dev/null || status=$?
    echo "engine ${plan.engineId} exited (status $status) before answering /health; last log lines:" >&2
    tail -n 20 "$run/engine.log" >&2
${recoveryHintScript()}
    ${keepLine(plan, '"$status"', `engine ${plan.engineId} exited before answering /health`)}
    forget_pid "$run/pid"; rm -f "$run/plan.sha256" "$run/engine.env"
    exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "engine ${plan.engineId} did not answer /health within health timeout ${opts.healthTimeoutS}s; stopped it. Last log lines:" >&2
    tail -n 20 "$run/engine.log" >&2
    kill -TERM "-$pid" 2>/dev/null || true
    ${keepLine(plan, "''", `engine ${plan.engineId} did not answer /health within health timeout ${opts.healthTimeoutS}s; stopped it`)}
    forget_pid "$run/pid"; rm -f "$run/plan.sha256" "$run/engine.env"
    exit 1
  fi
  sleep 0.3
done
printf '{"pid":%s,"startedAt":"%s"}\\n' "$pid" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$run/started"
cat "$run/started"
`;
}

/** The command line a start ran, as its kept attempt names it: the plan's environment and argv (the key is in the env file). */
export function launchCommandLine(plan: LaunchPlan): string {
  return `env ${shellLine(Object.entries(plan.env).map(([k, v]) => `${k}=${v}`))} ${shellLine(plan.argv)}`;
}

/**
 * Keeps a failed start's log, exit status and command line in `$run/attempts/<start>-<pid>/` (./attempts.ts):
 * the next start writes a fresh `engine.log`, never over this one. Expects `attempt_started` and {@link ATTEMPTS_SH}.
 */
export function keepLine(plan: LaunchPlan, status: string, reason: string, log: "move" | "copy" = "move"): string {
  const keep = `keep_attempt "$run/${ATTEMPTS_DIR}" "$attempt_started" ${status} ${shq(reason)} ${shq(launchCommandLine(plan))}`;
  // A process that still runs keeps writing its log: the attempt takes a copy of what it wrote so far.
  return log === "move" ? `${keep} "$run/${NATIVE_ENGINE_LOG}"` : `${keep} && cp "$run/${NATIVE_ENGINE_LOG}" "$kept_attempt/" 2>/dev/null || true`;
}

/** Stops the engine's process group, escalating to SIGKILL after the stop timeout; removes the key file. */
export function stopScript(plan: LaunchPlan, opts: NativeRuntimeOptions): string {
  const run = shq(opts.runDir);
  return `set -u
${PID_FILE_SH}run=${run}
rm -f "$run/engine.env"
${stopPidFileLines(`engine ${plan.engineId}`, '"$run/pid"', opts.stopTimeoutS)}
forget_pid "$run/pid"; rm -f "$run/plan.sha256" "$run/started" "$run/gpus" "$run/machine"
`;
}
