import { shq } from "../shell";
import { dockerGpuWaitScript } from "./gpu-claims";
import { launchRecord, type LaunchPlan } from "../launch/plan";
import { ATTEMPTS_DIR, ATTEMPTS_SH } from "./attempts";
import { containerSpec, ContainerRuntimeOptions, ContainerSpec, isImageId, LABELS } from "./container-spec";

/**
 * Shell scripts that run an engine as a container through the docker CLI on its host: the `create`,
 * `delete` (and an explicit reconcile) of a remote command. Like lib/runtime/native.ts they are safe to
 * run again after an interruption, adopt an interrupted start, and never start an engine twice.
 *
 * Every docker client call runs under `timeout` with a deadline from `runtime.deadlinesS`; a call that
 * overruns fails with a message naming the call and the deadline. Because a client that timed out (or a
 * script that was cancelled) may leave the daemon creating or running a container nobody recorded, each
 * start attempt first persists a fresh launch token in `<runDir>/launch-token` and only then runs the
 * container labelled with it. Containers are found by their labels, never by a remembered id:
 *   - reconcile (start's first step, and `reconcileScript`): of this engine's containers (labels
 *     `narwhal.fleet/stack` + `narwhal.fleet/engine`), one that is running with the same plan hash and the
 *     same container spec hash is adopted; every other one is stopped and removed;
 *   - a start that fails or is interrupted (deadline, health timeout, INT/TERM/HUP) keeps each container's
 *     `docker logs` and `docker inspect` in `<runDir>/attempts/<start>-<pid>/` (lib/runtime/attempts.ts), then
 *     removes the containers of its own launch token before it exits, so it never touches another attempt's container; whatever
 *     the daemon finishes creating after that is removed by the next start, stop or reconcile;
 *   - stop removes every container of this engine (by label) with its anonymous volumes, then the private
 *     env file.
 * The container name `narwhal-<stack>-<engine>` is unique on the daemon, so even two concurrent starts
 * cannot run the engine twice: the second `docker run` is refused.
 *
 * Files in the run dir (0700): `container.env` (0600, `--env-file`: the API key, never on a command line),
 * `launch.json` (plan and container spec, no secrets), `launch-token`, `image.id`, `container.id`,
 * `started` (the JSON line below), `engine.log` (container log tail, written when a start fails), and
 * `runbook-container.id` when the engine is a container the runbook's launcher started (adopted).
 */

export interface DockerDeadlinesS {
  /** `docker pull` of a registry digest that is not on the host yet. */
  readonly pull: number;
  /** `docker run` and then the wait for `/health`, together. */
  readonly start: number;
  /** Grace period of `docker stop -t` (the client call gets this plus `inspect`). */
  readonly stop: number;
  /** Every inspection and listing: `image inspect`, `inspect`, `ps`, `logs`. */
  readonly inspect: number;
}

export interface DockerCliOptions {
  /** Per-engine folder on the host (0700). Absolute. */
  readonly runDir: string;
  /** `runtime.dockerCommand`; default "docker". */
  readonly dockerCommand?: string;
  /** `runtime.deadlinesS` (defaults: pull 600, start 300, stop 60, inspect 30). */
  readonly deadlinesS: DockerDeadlinesS;
}

/** The container options the scripts take; the launch token and env file path belong to the script. */
export type ContainerTarget = Omit<ContainerRuntimeOptions, "launchToken" | "envFile">;

/** Replaced in the rendered script by the shell variable holding this attempt's token. */
const TOKEN_MARKER = "@NARWHAL_LAUNCH_TOKEN@";

/**
 * A container the runbook's launcher runs for this engine (lib/launch/runbook.ts decided): kept as the
 * engine (adopt) or stopped before the program's starts (replace).
 */
export interface RunbookContainerTakeover {
  readonly action: "adopt" | "replace";
  /** The launcher's `container.id` (64 hex). */
  readonly containerId: string;
  /** The launch directory, and (adopt) the launcher's plan hash: recorded with the adoption. */
  readonly run: string;
  readonly runbookPlanSha256?: string;
  /** Why: printed where the operator reads the up's log. */
  readonly reason: string;
}

/** A kept failed start's files beside its `engine.log` (the container's whole `docker logs`), in `attempts/<start>-<pid>/`. */
export const ATTEMPT_FILES = { inspect: "inspect.json" } as const;

export const RUN_FILES = {
  envFile: "container.env",
  /** An adopted runbook container: it carries the launcher's labels, not ours, so stop finds it here. */
  runbookContainer: "runbook-container.id",
  launchToken: "launch-token",
  containerId: "container.id",
  started: "started",
  imageId: "image.id",
  launchJson: "launch.json",
  log: "engine.log",
} as const;

function runPath(opts: DockerCliOptions, file: string): string {
  return `${opts.runDir.replace(/\/+$/, "")}/${file}`;
}

/** The container spec as the scripts run it: the token is the per-attempt shell variable `$token`. */
export function scriptContainerSpec(plan: LaunchPlan, target: ContainerTarget, opts: DockerCliOptions): ContainerSpec {
  return containerSpec(plan, { ...target, launchToken: TOKEN_MARKER, envFile: runPath(opts, RUN_FILES.envFile) });
}

/** Quotes one word, turning the token marker into `"$token"`. */
function word(w: string): string {
  const parts = w.split(TOKEN_MARKER);
  return parts.map((p) => (p === "" ? "" : shq(p))).join('"$token"') || "''";
}

function checkOptions(opts: DockerCliOptions): void {
  if (!opts.runDir.startsWith("/")) throw new Error(`docker-cli: run dir ${JSON.stringify(opts.runDir)} must be an absolute path`);
  for (const [k, v] of Object.entries(opts.deadlinesS)) {
    if (!Number.isInteger(v) || v <= 0) throw new Error(`docker-cli: runtime.deadlinesS.${k} must be a positive whole number of seconds, got ${v}`);
  }
}

const INSPECT_FORMAT = [
  "{{.State.Running}}",
  `{{index .Config.Labels ${JSON.stringify(LABELS.planSha256)}}}`,
  `{{index .Config.Labels ${JSON.stringify(LABELS.specSha256)}}}`,
  `{{index .Config.Labels ${JSON.stringify(LABELS.launchToken)}}}`,
  "{{.State.StartedAt}}",
].join("|");

/** Shared prelude: variables, the bounded docker call `dk`, container removal and reconcile. */
function prelude(plan: LaunchPlan, target: ContainerTarget, opts: DockerCliOptions, spec: ContainerSpec): string {
  checkOptions(opts);
  const d = opts.deadlinesS;
  const stopClient = d.stop + d.inspect;
  return `run=${shq(opts.runDir)}
docker=${shq(opts.dockerCommand ?? "docker")}
engine=${shq(plan.engineId)}
plan_sha=${shq(plan.planSha256)}
spec_sha=${shq(spec.specSha256)}
l_stack=${shq(`label=${LABELS.stack}=${target.stack}`)}
l_engine=${shq(`label=${LABELS.engine}=${target.engineId}`)}
say() { last_said="$*"; printf 'docker-cli engine %s: %s\\n' "$engine" "$*" >&2; }
die() { say "$*"; exit 1; }
# dk DEADLINE SECONDS WHAT ARGS...: one docker client call bounded by timeout(1). An overrun is reported
# naming the call and its deadline, and returns 124 so that callers can tell it from docker's own errors.
dk() {
  dk_deadline=$1; dk_secs=$2; dk_what=$3; shift 3
  dk_rc=0
  timeout -k 5 "$dk_secs" "$docker" "$@" || dk_rc=$?
  if [ "$dk_rc" -eq 124 ] || [ "$dk_rc" -eq 137 ]; then
    say "'docker $dk_what' did not finish within its deadline of \${dk_secs}s ($dk_deadline); stopped the client"
    return 124
  fi
  return "$dk_rc"
}
dk_inspect() { dk_w=$1; shift; dk 'runtime.deadlinesS.inspect' ${d.inspect} "$dk_w" "$@"; }
# Removes one container: docker stop -t <stop deadline>, then docker rm. Succeeds when it is already gone.
# rm -v takes the anonymous volumes docker made for the image's declared VOLUMEs along; named ones stay.
remove_container() {
  dk 'runtime.deadlinesS.stop ${d.stop}s grace + runtime.deadlinesS.inspect ${d.inspect}s' ${stopClient} "stop $1" stop -t ${d.stop} "$1" >/dev/null 2>&1 || true
  if ! dk 'runtime.deadlinesS.stop' ${d.stop} "rm $1" rm -f -v "$1" >/dev/null; then
    rc_left=$(dk_inspect "ps (is $1 gone?)" ps -aq --no-trunc --filter "id=$1") || return 1
    [ -z "$rc_left" ] || return 1
  fi
}
# keep_container ID REASON: keeps a failed container's docker logs and inspect output as a failed attempt
# (lib/runtime/attempts.ts) before anything removes it.
${ATTEMPTS_SH}attempt_started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
run_line=
keep_container() {
  kc_tmp="$run/.attempt.$$"
  mkdir -p "$kc_tmp"
  dk_inspect "logs $1" logs "$1" > "$kc_tmp/${RUN_FILES.log}" 2>&1 || true
  dk_inspect "inspect $1" inspect "$1" > "$kc_tmp/${ATTEMPT_FILES.inspect}" 2>/dev/null || true
  # The container's own exit code when it exited; none when the start stopped it (a deadline, a signal).
  kc_state=$(dk_inspect "inspect $1" inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$1" 2>/dev/null) || kc_state=
  case $kc_state in "exited "*) kc_status=\${kc_state#exited } ;; *) kc_status= ;; esac
  keep_attempt "$run/${ATTEMPTS_DIR}" "$attempt_started" "$kc_status" "$2" "$run_line" "$kc_tmp/${RUN_FILES.log}" "$kc_tmp/${ATTEMPT_FILES.inspect}"
  rmdir "$kc_tmp" 2>/dev/null || true
}
# reconcile: of this engine's containers, adopt one running this plan and spec; stop and remove the rest.
adopted=; adopted_token=; adopted_started=; removed=
rb_adopted=; rb_started=; rb_record=
reconcile() {
  rc_ids=$(dk_inspect "ps (containers of engine $engine)" ps -aq --no-trunc --filter "$l_stack" --filter "$l_engine") ||
    die "could not list this engine's containers"
  for rc_id in $rc_ids; do
    rc_info=$(dk_inspect "inspect $rc_id" inspect --format ${shq(INSPECT_FORMAT)} "$rc_id") || {
      rc_st=$?
      [ "$rc_st" -ne 124 ] || die "could not inspect container $rc_id"
      continue # removed since the listing
    }
    rc_ifs=$IFS; IFS='|'; set -- $rc_info; IFS=$rc_ifs
    if [ -z "$adopted" ] && [ "\${1:-}" = true ] && [ "\${2:-}" = "$plan_sha" ] && [ "\${3:-}" = "$spec_sha" ]; then
      adopted=$rc_id; adopted_token=\${4:-}; adopted_started=\${5:-}
    else
      say "removing container $rc_id (running=\${1:-}, plan \${2:-}, spec \${3:-}, launch token \${4:-}): not this engine's current launch"
      # A stopped one is an earlier start that failed and was cut off before it cleaned up: its evidence first.
      [ "\${1:-}" = true ] || keep_container "$rc_id" "container of launch token \${4:-} found stopped by a later start or reconcile"
      remove_container "$rc_id" || die "could not remove container $rc_id; nothing was started"
      removed="$removed $rc_id"
    fi
  done
}
`;
}

/**
 * `create`: image identity check, reconcile (adopt or clean up), `docker run`, then the wait for `/health`,
 * all within the deadlines. Reads the private env file from stdin in the same form as the native runtime
 * (`KEY='value'` lines, lib/shell envFile) and writes it as a 0600 docker env file. Prints one JSON line:
 * `{"containerId": "<64 hex>", "startedAt": "<the container's State.StartedAt>", "launchToken": "<hex>"}`;
 * an adopted container prints the same line as the start that created it. With a runbook takeover, an
 * adopted runbook container prints its own ID and start, an empty token and `"adopted": {launcher, run,
 * planSha256}`.
 */
export function startScript(plan: LaunchPlan, target: ContainerTarget, opts: DockerCliOptions, runbook?: RunbookContainerTakeover): string {
  const spec = scriptContainerSpec(plan, target, opts);
  const d = opts.deadlinesS;
  const image = target.image;
  const launchJson = JSON.stringify({ plan: launchRecord(plan), container: { ...spec, launchToken: "(per attempt: see launch-token)" } });
  // The docker run a kept attempt names (the token is the attempt's, in its inspect output).
  const runLine = [opts.dockerCommand ?? "docker", ...spec.runArgv.map((w) => w.split(TOKEN_MARKER).join("<launch token>"))].join(" ");
  const imageCheck = isImageId(image)
    ? `image_id=$(dk_inspect "image inspect $image" image inspect --format '{{.Id}}' "$image") || {
  [ $? -ne 124 ] || die "image identity check did not finish; nothing was started"
  die "image identity check failed: runtime.image is $image, but the daemon has no such image (docker image inspect found none); an image ID cannot be pulled, so build or load it on this host"
}
[ "$image_id" = "$image" ] ||
  die "image identity check failed: runtime.image is $image, but docker image inspect resolved it to $image_id"`
    : `image_id=$(dk_inspect "image inspect $image" image inspect --format '{{.Id}}' "$image") || {
  [ $? -ne 124 ] || die "image identity check did not finish; nothing was started"
  dk 'runtime.deadlinesS.pull' ${d.pull} "pull $image" pull "$image" >&2 || die "could not pull $image; nothing was started"
  image_id=$(dk_inspect "image inspect $image" image inspect --format '{{.Id}}' "$image") || die "image $image is missing after its pull"
}
repo_digests=$(dk_inspect "image inspect $image" image inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$image") ||
  die "could not read the repo digests of $image"
printf '%s\\n' "$repo_digests" | grep -qxF "$image" ||
  die "image identity check failed: runtime.image is $image, but the image docker resolved ($image_id) has repo digests: $(printf '%s ' $repo_digests)"`;

  return `set -eu
umask 077
${prelude(plan, target, opts, spec)}image=${shq(image)}
health=${shq(`${plan.url}/health`)}
mkdir -p "$run" && chmod 700 "$run"

# A start that fails or is interrupted removes what it launched (or adopted and found unhealthy), after
# keeping each container's log and inspect output as the failed attempt's evidence (lib/runtime/attempts.ts).
attempt=
run_line=${shq(runLine)}
on_exit() {
  st=$?
  set +e
  trap - EXIT INT TERM HUP
  if [ "$st" -ne 0 ] && [ -n "$attempt" ]; then
    why=\${last_said:-the start exited $st}
    say "start failed (exit $st); removing the containers of launch token $attempt"
    ids=$(dk_inspect "ps (launch token $attempt)" ps -aq --no-trunc --filter "$l_engine" --filter "label=${LABELS.launchToken}=$attempt")
    for id in $ids; do
      keep_container "$id" "$why"
      remove_container "$id" || say "could not remove $id; the next start, stop or reconcile removes it"
    done
  fi
  exit "$st"
}
trap on_exit EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# The private env file: stdin holds KEY='value' lines; docker's --env-file takes KEY=value verbatim.
cat > "$run/env.in"
(
  names=$(sed -n 's/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p' "$run/env.in")
  set -a; . "$run/env.in"; set +a
  for name in $names; do
    eval "value=\\\${$name}"
    case $value in *'
'*) echo "docker-cli engine $engine: $name holds a newline, which docker --env-file cannot carry" >&2; exit 1 ;; esac
    printf '%s=%s\\n' "$name" "$value"
  done
) > "$run/${RUN_FILES.envFile}" || { rm -f "$run/env.in" "$run/${RUN_FILES.envFile}"; exit 1; }
rm -f "$run/env.in"
printf '%s\\n' ${shq(launchJson)} > "$run/${RUN_FILES.launchJson}"

# Image identity before anything starts.
${imageCheck}
printf '%s\\n' "$image_id" > "$run/${RUN_FILES.imageId}"

reconcile
t0=$(date +%s)
${runbook ? runbookTakeoverScript(plan, runbook, opts) : ""}if [ -n "$adopted" ]; then
  # An earlier start of this very plan and spec is running: adopt it, never start a second one.
  say "adopting running container $adopted (launch token $adopted_token)"
  cid=$adopted; token=$adopted_token; started=$adopted_started
  attempt=$token
  printf '%s\\n' "$token" > "$run/${RUN_FILES.launchToken}"
elif [ -n "$rb_adopted" ]; then
  # The runbook's container serves this plan: it is the engine now. No launch token: a failure to
  # answer /health below leaves it as it was found.
  cid=$rb_adopted; token=; started=$rb_started
  printf '%s\\n' "$cid" > "$run/${RUN_FILES.runbookContainer}"
else
${gpuWait(plan, target, opts)}  token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')
  [ \${#token} -eq 32 ] || die "could not make a launch token"
  # Persisted before the daemon hears of it: a client that times out may still leave a container behind.
  printf '%s\\n' "$token" > "$run/${RUN_FILES.launchToken}"
  attempt=$token
  cid=$(dk 'runtime.deadlinesS.start' ${d.start} "run (container ${spec.name})" ${spec.runArgv.map(word).join(" ")}) ||
    die "docker run failed (launch token $token)"
  started=$(dk_inspect "inspect $cid" inspect --format '{{.State.StartedAt}}' "$cid") || die "could not inspect the new container $cid"
fi
printf '%s\\n' "$cid" > "$run/${RUN_FILES.containerId}"

save_log() {
  dk_inspect "logs $cid" logs --tail 200 "$cid" > "$run/${RUN_FILES.log}" 2>&1 || true
  tail -n 20 "$run/${RUN_FILES.log}" >&2
}
deadline=$((t0 + ${d.start}))
until curl -fsS -o /dev/null --max-time 2 "$health" 2>/dev/null; do
  state=$(dk_inspect "inspect $cid" inspect --format '{{.State.Status}} (exit code {{.State.ExitCode}})' "$cid") ||
    die "could not inspect container $cid while waiting for /health"
  case $state in
    running*) ;;
    *) say "container $cid is $state before answering /health; last log lines:"; save_log; exit 1 ;;
  esac
  if [ "$(date +%s)" -ge "$deadline" ]; then
    say "container $cid did not answer /health within the start deadline of ${d.start}s (runtime.deadlinesS.start); removing it. Last log lines:"
    save_log
    exit 1
  fi
  sleep 0.5
done
printf '{"containerId":"%s","startedAt":"%s","launchToken":"%s"%s}\\n' "$cid" "$started" "$token" "$rb_record" > "$run/${RUN_FILES.started}"
attempt=
cat "$run/${RUN_FILES.started}"
`;
}

/**
 * Sets `rb_adopted` (with `rb_started` and `rb_record`, the JSON tail of the start line) when the
 * runbook's container is kept; stops it when it is replaced. Runs after reconcile: a running container
 * of the program's own for this plan wins, and the runbook's is then stopped like a replaced one.
 */
function runbookTakeoverScript(plan: LaunchPlan, t: RunbookContainerTakeover, opts: DockerCliOptions): string {
  if (!/^[0-9a-f]{64}$/.test(t.containerId)) throw new Error(`engine ${plan.engineId}: runbook container ID ${JSON.stringify(t.containerId)} is not 64 hex digits`);
  const d = opts.deadlinesS;
  const record = JSON.stringify({ adopted: { launcher: "runbook", run: t.run, planSha256: t.runbookPlanSha256 ?? null } }).slice(1, -1);
  return `rb_cid=${t.containerId}
rb_state=$(dk_inspect "inspect $rb_cid (the runbook's container)" inspect --format '{{.State.Running}}|{{.State.StartedAt}}' "$rb_cid" 2>/dev/null) || rb_state=gone
case $rb_state in
  true\\|*)
    if [ -z "$adopted" ] && [ ${shq(t.action)} = adopt ]; then
      printf '%s\\n' ${shq(t.reason)} >&2
      rb_adopted=$rb_cid; rb_started=\${rb_state#true|}; rb_record=,${shq(record)}
    else
      if [ -n "$adopted" ]; then
        say "the program's own container $adopted serves this plan; stopping the runbook's container $rb_cid"
      else
        printf '%s\\n' ${shq(t.reason)} >&2
      fi
      # Stopped, not removed: its log stays with the runbook's records.
      dk 'runtime.deadlinesS.stop ${d.stop}s grace + runtime.deadlinesS.inspect ${d.inspect}s' ${d.stop + d.inspect} "stop $rb_cid (the runbook's container)" stop -t ${d.stop} "$rb_cid" >/dev/null ||
        die "could not stop the runbook's container $rb_cid; nothing was started"
    fi ;;
  *) say "the runbook's container $rb_cid is no longer running; starting the program's engine" ;;
esac
`;
}

/** Engines sharing a GPU start one after the other (lib/runtime/gpu-claims.ts), bounded by stop + start deadlines. */
export function gpuWait(plan: LaunchPlan, target: ContainerTarget, opts: DockerCliOptions): string {
  const d = opts.deadlinesS;
  return dockerGpuWaitScript(plan, {
    stack: target.stack,
    waitS: d.stop + d.start,
    inspectS: d.inspect,
    stackLabel: LABELS.stack,
    engineLabel: LABELS.engine,
    gpusLabel: LABELS.gpus,
  });
}

/**
 * `delete`: removes the private env file, then stops (`docker stop -t <stop deadline>`) and removes every
 * container of this engine, found by label. Succeeds when nothing is there; fails (so that Pulumi keeps
 * the resource and the delete can run again) when a container could not be removed.
 */
export function stopScript(plan: LaunchPlan, target: ContainerTarget, opts: DockerCliOptions): string {
  const spec = scriptContainerSpec(plan, target, opts);
  return `set -u
${prelude(plan, target, opts, spec)}rm -f "$run/${RUN_FILES.envFile}" "$run/env.in"
ids=$(dk_inspect "ps (containers of engine $engine)" ps -aq --no-trunc --filter "$l_stack" --filter "$l_engine") ||
  die "could not list this engine's containers; nothing was stopped"
[ -f "$run/${RUN_FILES.runbookContainer}" ] && ids="$ids $(tr -dc '0-9a-f' < "$run/${RUN_FILES.runbookContainer}")"
failed=
for id in $ids; do
  remove_container "$id" || failed="$failed $id"
done
[ -z "$failed" ] || die "could not remove container(s)$failed; run the stop again"
rm -f "$run/${RUN_FILES.launchToken}" "$run/${RUN_FILES.containerId}" "$run/${RUN_FILES.started}" "$run/${RUN_FILES.runbookContainer}"
`;
}

/**
 * Reconciles the daemon with this plan without starting anything: a running container of this plan and
 * spec is adopted (its token persisted), every other container of this engine is removed. Prints one
 * JSON line `{"containerId": id|null, "startedAt": t|null, "launchToken": t|null, "removed": [ids]}`.
 * Run it after a failed or cancelled create (the next start does the same as its first step).
 */
export function reconcileScript(plan: LaunchPlan, target: ContainerTarget, opts: DockerCliOptions): string {
  const spec = scriptContainerSpec(plan, target, opts);
  return `set -eu
umask 077
${prelude(plan, target, opts, spec)}reconcile
json_removed=
for id in $removed; do json_removed="$json_removed\${json_removed:+,}\\"$id\\""; done
if [ -n "$adopted" ]; then
  if [ -d "$run" ]; then
    printf '%s\\n' "$adopted_token" > "$run/${RUN_FILES.launchToken}"
    printf '%s\\n' "$adopted" > "$run/${RUN_FILES.containerId}"
  fi
  printf '{"containerId":"%s","startedAt":"%s","launchToken":"%s","removed":[%s]}\\n' "$adopted" "$adopted_started" "$adopted_token" "$json_removed"
else
  printf '{"containerId":null,"startedAt":null,"launchToken":null,"removed":[%s]}\\n' "$json_removed"
fi
`;
}
