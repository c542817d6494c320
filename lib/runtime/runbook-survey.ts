import { shq } from "../shell";

/**
 * A read-only shell script that reports what a runbook launch directory (`ENGINE_RUN`, see
 * lib/launch/runbook.ts) records and whether its engine still runs, as one JSON line (RunbookSurvey).
 * Files travel as base64 so that no JSON is assembled from their text in the shell. Of the private env
 * file only the given keys are read (the caller never asks for a secret's), so the line can be kept.
 */
export interface RunbookSurveyOptions {
  /** The launch directory on the engine's host (absolute). */
  readonly run: string;
  /** Environment keys to read from the launcher's env file (lib/launch/runbook.ts surveyEnvKeys). */
  readonly envKeys: ReadonlyArray<string>;
  /** `runtime.dockerCommand`; only run when the directory records a container. */
  readonly dockerCommand?: string;
  /** Bound on the one `docker inspect`. */
  readonly inspectTimeoutS: number;
}

/**
 * Shell function `names_run <pid> <dir>`: whether a process's command line names a runbook launch
 * directory (an argument that is the directory or a path inside it, or `--run=`/`--document=` one). The
 * runbook records no pid for its attestation sidecar, so this is how that sidecar is recognised:
 * narwhal's `attestation_contract serve --run <dir>` or `narwhal-attest --document <dir>/engine-attestation.json`.
 */
export const NAMES_RUN_FUNCTION = `names_run() {
  tr '\\000' '\\n' < "/proc/$1/cmdline" 2>/dev/null | while IFS= read -r arg; do
    case $arg in "$2"|"$2"/*|--run="$2"|--document="$2"/*) echo yes; break ;; esac
  done
}
`;

/**
 * Prints, one per line, the pids of listening processes that belong to one of `runs`: their command line
 * names it (the runbook's sidecar, a native engine), or they run in the container its `container.id`
 * records (the launcher starts containers with `--network host`, so the engine listens on the host and
 * its cgroup path carries the container ID, with either cgroup driver).
 */
export function runbookListenerPidsScript(runs: ReadonlyArray<string>): string {
  if (runs.length === 0) return "";
  return `${NAMES_RUN_FUNCTION}in_run_container() {
  [ -f "$2/container.id" ] || return 1
  rb_cid=$(tr -dc '0-9a-f' < "$2/container.id")
  [ \${#rb_cid} -eq 64 ] && grep -qF "$rb_cid" "/proc/$1/cgroup" 2>/dev/null
}
for rb_listener in $(ss -Hltnp 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do
  for rb_run in ${runs.map(shq).join(" ")}; do
    if [ "$(names_run "$rb_listener" "$rb_run")" = yes ] || in_run_container "$rb_listener" "$rb_run"; then echo "$rb_listener"; break; fi
  done
done
`;
}

export function surveyScript(o: RunbookSurveyOptions): string {
  if (!o.run.startsWith("/")) throw new Error(`runbook survey: launch directory ${JSON.stringify(o.run)} must be an absolute path`);
  for (const k of o.envKeys) if (!/^[A-Z_][A-Z0-9_]*$/.test(k)) throw new Error(`runbook survey: ${JSON.stringify(k)} is not an environment name`);
  const keys = o.envKeys.join("|") || "NARWHAL_NO_KEY_";
  return `set -u
run=${shq(o.run)}
docker=${shq(o.dockerCommand ?? "docker")}
b64() { if [ -f "$run/$1" ]; then printf '"%s"' "$(base64 -w0 < "$run/$1")"; else printf null; fi; }
jstr() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\\\/\\\\\\\\/g; s/"/\\\\"/g')"; }
live=null
pid=$( [ -f "$run/native-process.json" ] && sed -n 's/.*"pid": *\\([0-9][0-9]*\\).*/\\1/p' "$run/native-process.json" | head -n 1 )
if [ -n "\${pid:-}" ] && [ -r "/proc/$pid/stat" ]; then
  stat=$(cat "/proc/$pid/stat" 2>/dev/null || true)
  if [ -n "$stat" ]; then
    # Fields after the command name: state is 1st, process group 3rd, start time (ticks) 20th.
    set -- \${stat##*) }
    case $1 in Z|X) ;; *) live=$(printf '{"pid":%s,"pgid":%s,"startTicks":%s,"bootId":"%s","btime":%s,"clockTicks":%s}' "$pid" "$3" "\${20}" "$(cat /proc/sys/kernel/random/boot_id)" "$(sed -n 's/^btime //p' /proc/stat)" "$(getconf CLK_TCK 2>/dev/null || echo 100)") ;; esac
  fi
fi
cid=; container=null
if [ -f "$run/container.id" ]; then
  cid=$(tr -dc '0-9a-f' < "$run/container.id")
  info=$(timeout -k 5 ${o.inspectTimeoutS} "$docker" inspect --format '{{.State.Running}}|{{.Image}}|{{index .Config.Labels "io.narwhal.launch"}}|{{.State.StartedAt}}' "$cid" 2>/dev/null) && {
    old_ifs=$IFS; IFS='|'; set -- $info; IFS=$old_ifs
    container=$(printf '{"running":%s,"image":%s,"ownerLabel":%s,"startedAt":%s}' "$( [ "$1" = true ] && echo true || echo false)" "$(jstr "\${2:-}")" "$(jstr "\${3:-}")" "$(jstr "\${4:-}")")
  }
fi
env_file=
for f in engine.env container.env; do [ -f "$run/$f" ] && env_file="$run/$f" && break; done
env='{'
if [ -n "$env_file" ]; then
  sep=
  while IFS= read -r line; do
    env="$env$sep$(jstr "\${line%%=*}"):$(jstr "\${line#*=}")"; sep=,
  done <<EOF
$(grep -E '^(${keys})=' "$env_file" 2>/dev/null || true)
EOF
fi
env="$env}"
printf '{"run":%s,"launchJson":%s,"checkedJson":%s,"processJson":%s,"ownerJson":%s,"attestationJson":%s,"live":%s,"containerId":%s,"container":%s,"env":%s}\\n' \\
  "$(jstr "$run")" "$(b64 launch.json)" "$(b64 checked.json)" "$(b64 native-process.json)" "$(b64 docker-owner.json)" "$(b64 engine-attestation.json)" "$live" \\
  "$( [ -n "$cid" ] && jstr "$cid" || echo null)" "$container" "$env"
`;
}

/** Parses the survey's JSON line; JSON `null` fields become absent. */
export function parseSurvey(stdout: string): import("../launch/runbook").RunbookSurvey {
  const line = stdout.trim().split("\n").filter((l) => l.startsWith("{")).pop();
  if (!line) throw new Error(`runbook survey printed no JSON line: ${stdout.slice(0, 200)}`);
  const raw = JSON.parse(line) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== null)) as never;
}
