/**
 * Prometheus and Grafana on the router host, as `create`/`delete` scripts of remote commands. Targets
 * are their own small command: Prometheus re-reads file_sd files by itself, so a fleet change rewrites
 * them without restarting anything. Config files hold no secret and are world-readable, since the
 * containers' users are not root; Grafana's admin password reaches it only through a 0600 env file.
 */
import { shellLine, shq } from "../shell";
import { portCheckScript, refuseTakenPortLines, type TakenPort } from "../port-taken";
import { PID_FILE_SH, stopPidFileLines } from "../pid-file";
import { readyWait } from "../ready-wait";
import { FRESHNESS_EXPORTER_PY, freshnessArgv, type FreshnessRunOptions } from "./freshness-exporter";

export interface ObservabilityFiles {
  /** File name (inside the folder) -> content. */
  readonly [name: string]: string;
}

/** Writes each file through a temporary name and a rename, so a reader never sees half a file. */
export function writeFilesScript(dir: string, files: ObservabilityFiles, mode = "644"): string {
  return `set -eu
mkdir -p ${shq(dir)}
${Object.entries(files)
  .map(([name, text]) => {
    if (!/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/.test(name) || name.split("/").includes("..")) throw new Error(`observability file name ${JSON.stringify(name)} is not a plain relative path`);
    const path = `${dir}/${name}`;
    return `mkdir -p "$(dirname ${shq(path)})"
printf '%s\\n' ${shq(text)} > ${shq(`${path}.tmp`)}
chmod ${mode} ${shq(`${path}.tmp`)}
mv -f ${shq(`${path}.tmp`)} ${shq(path)}`;
  })
  .join("\n")}
`;
}

export interface PrometheusRunOptions {
  readonly runtime: "native" | "container";
  /** Folder holding prometheus.yml and its files (and data for the native runtime). */
  readonly dir: string;
  readonly command: string;
  readonly image: string;
  /** Container name (container runtime). */
  readonly containerName: string;
  readonly bindAddress: string;
  readonly port: number;
  readonly localUrl: string;
  readonly configDigest: string;
  readonly startTimeoutS: number;
  readonly stopTimeoutS: number;
  /** The router host's alias, named by a refusal. */
  readonly hostAlias?: string;
}

/** Prometheus's port as a refusal names it. */
function prometheusPort(o: Pick<PrometheusRunOptions, "port" | "hostAlias">): TakenPort {
  return { what: "prometheus", port: o.port, configKey: "observability.prometheusPort", hostAlias: o.hostAlias };
}

/**
 * Run before Prometheus is replaced (which stops the running one first, to free its port): refuses when its
 * port is held by anything but that Prometheus, so a refusal leaves it running.
 */
export function prometheusPortCheckScript(o: Pick<PrometheusRunOptions, "runtime" | "dir" | "containerName" | "port" | "hostAlias">): string {
  return portCheckScript({ ...prometheusPort(o), own: o.runtime === "native" ? { pidFile: `${o.dir}/pid` } : { container: o.containerName } });
}


export function prometheusArgs(o: Pick<PrometheusRunOptions, "dir" | "bindAddress" | "port">, storage: string): string[] {
  const listen = o.bindAddress.includes(":") ? `[${o.bindAddress}]:${o.port}` : `${o.bindAddress}:${o.port}`;
  return [`--config.file=${o.dir}/prometheus.yml`, `--storage.tsdb.path=${storage}`, `--web.listen-address=${listen}`, "--web.enable-lifecycle"];
}

/** Checks the config with promtool when the host has it, then starts Prometheus and waits for `/-/ready`. */
export function prometheusStartScript(o: PrometheusRunOptions): string {
  const what = `prometheus (${o.runtime})`;
  const ready = `${o.localUrl}/-/ready`;
  const check = `if command -v promtool >/dev/null 2>&1; then
  if ! out=$(promtool check config ${shq(`${o.dir}/prometheus.yml`)} 2>&1); then
    echo "prometheus: promtool rejects the generated configuration:" >&2
    echo "$out" >&2
    exit 1
  fi
fi`;
  if (o.runtime === "native") {
    return `set -eu
${PID_FILE_SH}dir=${shq(o.dir)}
if running=$(live_pid "$dir/pid"); then
  if [ "$(cat "$dir/config.digest" 2>/dev/null)" = ${shq(o.configDigest)} ] && [ -f "$dir/started" ]; then cat "$dir/started"; exit 0; fi
  echo "prometheus: pid $running already runs another configuration from $dir; stop it first" >&2
  exit 1
fi
if ! command -v ${shq(o.command)} >/dev/null 2>&1; then
  echo ${shq(`prometheus: ${o.command} is not on this host; install the prometheus package or set observability.prometheusCommand`)} >&2
  exit 1
fi
${check}
${refuseTakenPortLines(prometheusPort(o))}
mkdir -p "$dir/data"
(
  cd "$dir"
  exec setsid ${shellLine([o.command, ...prometheusArgs(o, `${o.dir}/data`)])} > "$dir/prometheus.log" 2>&1 < /dev/null
) &
pid=$!
record_pid "$pid" "$dir/pid"
printf '%s\\n' ${shq(o.configDigest)} > "$dir/config.digest"
${readyWait(ready, what, o.startTimeoutS, 'kill -0 "$pid" 2>/dev/null', 'tail -n 20 "$dir/prometheus.log" >&2', 'kill -TERM "-$pid" 2>/dev/null || true; forget_pid "$dir/pid"; rm -f "$dir/config.digest"')}
printf '{"pid":%s,"startedAt":"%s"}\\n' "$pid" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$dir/started"
cat "$dir/started"
`;
  }
  const name = shq(o.containerName);
  return `set -eu
dir=${shq(o.dir)}
if [ "$(docker inspect -f '{{.State.Running}} {{index .Config.Labels "narwhal.config-digest"}}' ${name} 2>/dev/null)" = ${shq(`true ${o.configDigest}`)} ]; then
  printf '{"container":"%s"}\\n' "$(docker inspect -f '{{.Id}}' ${name})"
  exit 0
fi
docker rm -f -v ${name} >/dev/null 2>&1 || true
${refuseTakenPortLines(prometheusPort(o))}
mkdir -p "$dir/data" && chmod 777 "$dir/data"
docker run -d --name ${name} --network host --restart unless-stopped --label ${shq(`narwhal.config-digest=${o.configDigest}`)} -v "$dir:$dir" ${shq(o.image)} ${shellLine(prometheusArgs(o, `${o.dir}/data`))} > /dev/null
${readyWait(ready, what, o.startTimeoutS, `[ "$(docker inspect -f '{{.State.Running}}' ${name} 2>/dev/null)" = true ]`, `docker logs --tail 20 ${name} >&2 2>&1 || true`, `docker rm -f -v ${name} >/dev/null 2>&1 || true`)}
printf '{"container":"%s"}\\n' "$(docker inspect -f '{{.Id}}' ${name})"
`;
}

/**
 * The container runtime removes its containers with `rm -v`: the Prometheus and Grafana images declare
 * VOLUMEs, and plain `rm` would leave an anonymous volume on the host at every restart and destroy.
 * What the stack keeps is bind-mounted from its folder; an anonymous volume is the container's own.
 */
export function prometheusStopScript(o: Pick<PrometheusRunOptions, "runtime" | "dir" | "containerName" | "stopTimeoutS">): string {
  if (o.runtime === "container") return `docker rm -f -v ${shq(o.containerName)} >/dev/null 2>&1 || true\n`;
  return stopByPidFileScript("prometheus", o.dir, o.stopTimeoutS, ["config.digest", "started"]);
}

/** Stops the process group whose leader `<dir>/pid` names (SIGKILL after the timeout), then forgets the pid and removes `files`. */
function stopByPidFileScript(what: string, dir: string, stopTimeoutS: number, files: string[]): string {
  return `set -u
${PID_FILE_SH}dir=${shq(dir)}
${stopPidFileLines(what, '"$dir/pid"', stopTimeoutS)}
forget_pid "$dir/pid"
rm -f ${files.map((f) => `"$dir/${f}"`).join(" ")}
`;
}

export interface GrafanaRunOptions {
  readonly dir: string;
  readonly image: string;
  readonly containerName: string;
  readonly port: number;
  readonly configDigest: string;
  readonly startTimeoutS: number;
  /** The router host's alias, named by a refusal. */
  readonly hostAlias?: string;
}

function grafanaPort(o: Pick<GrafanaRunOptions, "port" | "hostAlias">): TakenPort {
  return { what: "grafana", port: o.port, configKey: "observability.grafanaPort", hostAlias: o.hostAlias };
}

/** Run before Grafana is replaced: refuses when its port is held by anything but the running Grafana container. */
export function grafanaPortCheckScript(o: Pick<GrafanaRunOptions, "containerName" | "port" | "hostAlias">): string {
  return portCheckScript({ ...grafanaPort(o), own: { container: o.containerName } });
}

/** Grafana as a container with the provisioning folder mounted; the admin password arrives on stdin. */
export function grafanaStartScript(o: GrafanaRunOptions): string {
  const name = shq(o.containerName);
  const health = `http://127.0.0.1:${o.port}/api/health`;
  return `set -eu
dir=${shq(o.dir)}
umask 077
cat > "$dir/grafana.env.tmp"
mv -f "$dir/grafana.env.tmp" "$dir/grafana.env"
if [ "$(docker inspect -f '{{.State.Running}} {{index .Config.Labels "narwhal.config-digest"}}' ${name} 2>/dev/null)" = ${shq(`true ${o.configDigest}`)} ]; then
  printf '{"container":"%s"}\\n' "$(docker inspect -f '{{.Id}}' ${name})"
  exit 0
fi
docker rm -f -v ${name} >/dev/null 2>&1 || true
${refuseTakenPortLines(grafanaPort(o))}
docker run -d --name ${name} --network host --restart unless-stopped --label ${shq(`narwhal.config-digest=${o.configDigest}`)} --env-file "$dir/grafana.env" -e GF_SERVER_HTTP_PORT=${o.port} -e GF_AUTH_ANONYMOUS_ENABLED=true -e GF_AUTH_ANONYMOUS_ORG_ROLE=Viewer -v "$dir/provisioning:/etc/grafana/provisioning:ro" -v "$dir/dashboards:$dir/dashboards:ro" ${shq(o.image)} > /dev/null
${readyWait(health, "grafana", o.startTimeoutS, `[ "$(docker inspect -f '{{.State.Running}}' ${name} 2>/dev/null)" = true ]`, `docker logs --tail 20 ${name} >&2 2>&1 || true`, `docker rm -f -v ${name} >/dev/null 2>&1 || true`)}
printf '{"container":"%s"}\\n' "$(docker inspect -f '{{.Id}}' ${name})"
`;
}

export function grafanaStopScript(o: Pick<GrafanaRunOptions, "dir" | "containerName">): string {
  return `docker rm -f -v ${shq(o.containerName)} >/dev/null 2>&1 || true
rm -f ${shq(`${o.dir}/grafana.env`)}
`;
}

function freshnessPort(o: Pick<FreshnessRunOptions, "port" | "hostAlias">): TakenPort {
  return { what: "evidence freshness exporter", port: o.port, configKey: "observability.freshnessPort", hostAlias: o.hostAlias };
}

/** Run before the freshness exporter is replaced: refuses when its port is held by anything but the running exporter. */
export function freshnessPortCheckScript(o: Pick<FreshnessRunOptions, "dir" | "port" | "hostAlias">): string {
  return portCheckScript({ ...freshnessPort(o), own: { pidFile: `${o.dir}/pid` } });
}

/**
 * Writes the freshness exporter (lib/observability/freshness-exporter.ts) and starts it on the host's
 * python3, waiting for its `/health`. It reads `expected.json` at every scrape, so new evidence needs no
 * restart; a start whose exporter already runs the same code adopts it.
 */
export function freshnessStartScript(o: FreshnessRunOptions): string {
  const what = "evidence freshness exporter";
  const health = `http://127.0.0.1:${o.port}/health`;
  return `set -eu
${PID_FILE_SH}dir=${shq(o.dir)}
mkdir -p "$dir"
cat > "$dir/exporter.py.tmp" <<'NARWHAL_EXPORTER_EOF'
${FRESHNESS_EXPORTER_PY}
NARWHAL_EXPORTER_EOF
if running=$(live_pid "$dir/pid"); then
  if cmp -s "$dir/exporter.py" "$dir/exporter.py.tmp"; then rm -f "$dir/exporter.py.tmp"; cat "$dir/started"; exit 0; fi
  rm -f "$dir/exporter.py.tmp"
  echo "${what}: pid $running runs another exporter from $dir; stop it first" >&2
  exit 1
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo ${shq(`${what}: python3 is not on ${o.hostAlias ? `host ${o.hostAlias}` : "the router host"}; install it or set observability.freshnessPort to 0 to run without the exporter`)} >&2
  exit 1
fi
${refuseTakenPortLines(freshnessPort(o))}
mv -f "$dir/exporter.py.tmp" "$dir/exporter.py"
(
  cd "$dir"
  exec setsid ${shellLine(freshnessArgv(o))} > "$dir/exporter.log" 2>&1 < /dev/null
) &
pid=$!
record_pid "$pid" "$dir/pid"
${readyWait(health, what, o.startTimeoutS, 'kill -0 "$pid" 2>/dev/null', 'tail -n 20 "$dir/exporter.log" >&2', 'kill -TERM "-$pid" 2>/dev/null || true; forget_pid "$dir/pid"')}
printf '{"pid":%s,"startedAt":"%s"}\n' "$pid" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$dir/started"
cat "$dir/started"
`;
}

export function freshnessStopScript(o: Pick<FreshnessRunOptions, "dir" | "stopTimeoutS">): string {
  return stopByPidFileScript("evidence freshness exporter", o.dir, o.stopTimeoutS, ["started"]);
}
