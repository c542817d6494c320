/**
 * The attestation sidecar narwhal-inference ships (`narwhal-attest`), run beside one engine on its
 * host, bound to the engine's fabric address and its `attestationPort`. These are the `create` and
 * `delete` scripts of its remote command, safe to run again after an interruption: start adopts a
 * sidecar that already serves this very document and refuses one that serves another; stop succeeds
 * when nothing runs. The sidecar reads only `/version` and `/metrics`, which vLLM serves without the
 * API key, so no credential reaches it.
 */
import { shellLine, shq } from "../shell";
import { PID_FILE_SH, stopPidFileLines } from "../pid-file";
import { NAMES_RUN_FUNCTION } from "../runtime/runbook-survey";
import type { ProcessIdentity } from "../engine/generation";
import { AttestationError } from "./errors";
import { TRUST_STORE_SH } from "../trust-store";

/** Where the sidecar listens and how it is reached. */
export interface SidecarEndpoint {
  /** The engine's fabric address, unbracketed (narwhal-attest `--host`). */
  readonly bindHost: string;
  readonly port: number;
  /** `http://<address>:<port>/v1/attestation`: the fleet document's `attestation_url`. */
  readonly url: string;
  readonly healthUrl: string;
}

/** The sidecar endpoint of the engine whose base URL is `engineUrl` (its launch plan's `url`). */
export function sidecarEndpoint(engineUrl: string, attestationPort: number): SidecarEndpoint {
  const m = /^http:\/\/(\[[^\]]+\]|[^/:]+):\d+\/?$/.exec(engineUrl);
  if (!m) throw new AttestationError("NARWHAL_ATTESTATION_INPUT", `engine URL ${JSON.stringify(engineUrl)} is not http://<address>:<port>`);
  if (!(Number.isInteger(attestationPort) && attestationPort > 0 && attestationPort < 65536)) {
    throw new AttestationError("NARWHAL_ATTESTATION_INPUT", `attestationPort ${attestationPort} is not a TCP port`);
  }
  const base = `http://${m[1]}:${attestationPort}`;
  return { bindHost: m[1].replace(/^\[|\]$/g, ""), port: attestationPort, url: `${base}/v1/attestation`, healthUrl: `${base}/health` };
}

export interface SidecarOptions {
  readonly engineId: string;
  /** The sidecar command: the host's Gate B install's `narwhal-attest`, or `attestation.command`. */
  readonly command: string;
  /** Per-engine sidecar folder on the host (0700): document, pid, log. */
  readonly runDir: string;
  /** The document's JSON text and its canonical digest. */
  readonly document: string;
  readonly documentDigest: string;
  /** The engine's base URL (`--engine-base`). */
  readonly engineUrl: string;
  /** The engine's runtime: `--engine-pid` for a native process, `--engine-container` for a container. */
  readonly owner: ProcessIdentity;
  readonly endpoint: SidecarEndpoint;
  /** Bounded wait for the sidecar's `/health` after start. */
  readonly startTimeoutS: number;
  readonly stopTimeoutS: number;
  /**
   * The engine's runbook launch directory (`engines[].runbookRun`): a sidecar the runbook started for
   * it, found listening on this endpoint with the directory in its command line, is stopped and
   * replaced by the program's. Anything else on the endpoint still stops the start.
   */
  readonly takeoverRun?: string;
}

function ownerArgs(owner: ProcessIdentity): string[] {
  if (owner.containerId !== undefined) return ["--engine-container", owner.containerId];
  if (owner.pid !== undefined) return ["--engine-pid", LIVE_PID];
  throw new AttestationError("NARWHAL_ATTESTATION_INPUT", "the engine's process identity has neither pid nor containerId");
}

/** The sidecar's argv, document path included. */
export function sidecarArgv(o: SidecarOptions): string[] {
  return [
    o.command,
    "--document", `${o.runDir}/engine-attestation.json`,
    "--engine-base", o.engineUrl,
    ...ownerArgs(o.owner),
    "--host", o.endpoint.bindHost,
    "--port", String(o.endpoint.port),
  ];
}

/** Stands for the engine's pid in the argv until the start script resolves the live one. */
const LIVE_PID = "@ENGINE_PID@";

/** The shell pipeline printing the pid of the process listening on `port` on this host (empty when none). */
function listenerPid(port: string | number): string {
  return `ss -Hltnp ${shq(`( sport = :${port} )`)} 2>/dev/null | sed -n 's/.*pid=\\([0-9][0-9]*\\).*/\\1/p' | head -n 1`;
}

/**
 * A native engine restarted outside Pulumi (by an operator or a supervisor) keeps its plan but not
 * the pid its launcher recorded: the sidecar must watch the process that serves the engine's port now,
 * so the start script asks the host who listens there, and only falls back to the launcher's pid.
 */
function liveOwnerScript(o: SidecarOptions): string {
  if (o.owner.pid === undefined) return "";
  const port = new URL(o.engineUrl).port;
  return `engine_pid=$(${listenerPid(port)})
[ -n "$engine_pid" ] || engine_pid=${o.owner.pid}
`;
}

/**
 * Stops the runbook's own sidecar for this engine: the process listening on the endpoint's port whose
 * command line names the launch directory (narwhal's `attestation_contract serve --run <run>`, or
 * `narwhal-attest --document <run>/engine-attestation.json`). Any answer counts, a 503 too: the
 * runbook's sidecar of an engine the program replaced answers 503 and still holds the port.
 */
function runbookTakeoverScript(o: SidecarOptions): string {
  if (o.takeoverRun === undefined) return "";
  const who = `attestation sidecar of engine ${o.engineId}`;
  return `runbook=${shq(o.takeoverRun)}
${NAMES_RUN_FUNCTION}holder=$(${listenerPid(o.endpoint.port)})
if [ -n "$holder" ] && [ "$(names_run "$holder" "$runbook")" = yes ]; then
  echo ${shq(`${who}: stopping the runbook's sidecar`)}" (pid $holder, started for $runbook) on port ${o.endpoint.port}" >&2
  kill -TERM "$holder" 2>/dev/null || true
  deadline=$(( $(date +%s) + ${o.stopTimeoutS} ))
  # Not a zombie (start_of_pid): the runbook's sidecar may have been left to an init that does not reap.
  while start_of_pid "$holder" >/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then kill -KILL "$holder" 2>/dev/null || true; sleep 0.5; break; fi
    sleep 0.2
  done
fi
`;
}

/**
 * Writes the document (0600) and starts the sidecar detached from the SSH session, then waits for its
 * `/health`. Prints one JSON line: `{"pid": N, "startedAt": "<ISO time>"}`.
 */
export function sidecarStartScript(o: SidecarOptions): string {
  const who = `attestation sidecar of engine ${o.engineId}`;
  return `set -eu
${PID_FILE_SH}run=${shq(o.runDir)}
mkdir -p "$run" && chmod 700 "$run"
umask 077
if running=$(live_pid "$run/pid"); then
  # A start interrupted after launching: adopt the sidecar if it serves this very document, never start twice.
  if [ "$(cat "$run/document.digest" 2>/dev/null)" = ${shq(o.documentDigest)} ] && [ -f "$run/started" ]; then
    cat "$run/started"
    exit 0
  fi
  echo ${shq(who)}": pid $running already serves another document in $run; stop it first" >&2
  exit 1
fi
${runbookTakeoverScript(o)}if curl -sS -o /dev/null --max-time 2 ${shq(o.endpoint.healthUrl)} 2>/dev/null; then
  echo ${shq(`${who}: something already answers on ${o.endpoint.healthUrl}; find its owner (ss -ltnp) and stop it, or choose another attestationPort`)} >&2
  exit 1
fi
printf '%s\\n' ${shq(o.document)} > "$run/engine-attestation.json.tmp"
mv -f "$run/engine-attestation.json.tmp" "$run/engine-attestation.json"
if ! command -v ${shq(o.command)} >/dev/null 2>&1; then
  echo ${shq(`${who}: ${o.command} is not on this host; its Gate B install of narwhal-inference provides it (or correct attestation.command)`)} >&2
  exit 1
fi
${liveOwnerScript(o)}(
  cd "$run"
  ${TRUST_STORE_SH}
  exec setsid ${shellLine(sidecarArgv(o)).replace(shq(LIVE_PID), '"$engine_pid"')} > "$run/sidecar.log" 2>&1 < /dev/null
) &
pid=$!
record_pid "$pid" "$run/pid"
printf '%s\\n' ${shq(o.documentDigest)} > "$run/document.digest"
deadline=$(( $(date +%s) + ${o.startTimeoutS} ))
until curl -fsS -o /dev/null --max-time 2 ${shq(o.endpoint.healthUrl)} 2>/dev/null; do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo ${shq(`${who} exited before answering /health; last log lines:`)} >&2
    tail -n 20 "$run/sidecar.log" >&2
    forget_pid "$run/pid"; rm -f "$run/document.digest"
    exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo ${shq(`${who} did not answer /health at ${o.endpoint.healthUrl} within attestation.startTimeoutS ${o.startTimeoutS}s; stopped it. Last log lines:`)} >&2
    tail -n 20 "$run/sidecar.log" >&2
    kill -TERM "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    forget_pid "$run/pid"; rm -f "$run/document.digest"
    exit 1
  fi
  sleep 0.3
done
printf '{"pid":%s,"startedAt":"%s"}\\n' "$pid" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$run/started"
cat "$run/started"
`;
}

/** Stops the sidecar's process group, SIGKILL after the stop timeout; keeps the document and log for inspection. */
export function sidecarStopScript(o: Pick<SidecarOptions, "engineId" | "runDir" | "stopTimeoutS">): string {
  return `set -u
${PID_FILE_SH}run=${shq(o.runDir)}
${stopPidFileLines(`attestation sidecar of engine ${o.engineId}`, '"$run/pid"', o.stopTimeoutS)}
forget_pid "$run/pid"; rm -f "$run/document.digest" "$run/started"
`;
}
