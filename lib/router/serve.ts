/**
 * Gate G on the router host: `narwhal-serve` as a supervised process, the `create` and `delete` of one
 * remote command, on loopback behind the router's front (lib/router/front.ts). Start writes the fleet
 * document and profile store (0600, written then renamed), reads the engine API key from stdin into a 0600
 * environment file, refuses a backend port something else already serves, adopts a router of this very
 * document after an interruption, waits (bounded) for `/health` to report every engine, and releases the
 * front's hold either way. That no other router serves the same engines, on any fleet host, is checked
 * before this start by lib/router/controller-check.ts.
 */
import { createHash } from "node:crypto";
import { shellLine, shq } from "../shell";
import { PID_FILE_SH, stopPidFileLines } from "../pid-file";
import { portCheckScript, refuseTakenPortLines } from "../port-taken";
import { ATTEMPTS_DIR, ATTEMPTS_SH } from "../runtime/attempts";
import { TRUST_STORE_SH } from "../trust-store";
import { backendAddress, FRONT_HOLD_SH, frontDir } from "./front";
import { handoffCheckLines, readmitLines, type HandoffDecision, type Readmitted } from "./handoff";

export { localAddress, routerUrl } from "./address";

export interface RouterOptions {
  /** The router's folder on its host (0700): fleet.json, profiles, env file, pid, log, journal. */
  readonly runDir: string;
  /** The install's bin folder (Gate B's marker), holding `narwhal-serve`. */
  readonly binDir: string;
  /** Where the router's front listens for clients (lib/router/front.ts): `router.bindAddress`, `router.port`. */
  readonly bindAddress: string;
  readonly port: number;
  /** Where narwhal-serve itself listens, on loopback behind the front: `router.backendPort`. */
  readonly backendPort: number;
  /** The fleet document's JSON text. */
  readonly fleetDocument: string;
  /** The profile store's JSON text, written where the document's `profiles.path` points; absent: not written. */
  readonly profileStore?: string;
  /** Or the digest of a store Gate F already wrote there: part of what the router serves, so a new one swaps it. */
  readonly profileStoreDigest?: string;
  /** Bounded wait for `/health` to report ready, seconds. */
  readonly startTimeoutS: number;
  readonly stopTimeoutS: number;
  /** The router host's alias, named by a refusal. */
  readonly hostAlias?: string;
  /** The router's liveness epoch (dynamic-providers/liveness): a new one, minted when a refresh found the router down, starts it again. */
  readonly restartEpoch?: string;
}

/** What the start script prints (one JSON line). */
export interface RouterStarted {
  readonly pid: number;
  readonly startedAt: string;
  /** `/health` at the moment it first answered ready. */
  readonly health: { status: string; instances: number; available_instances?: number };
  /** Whether it took over the serving router's holds (lib/router/handoff.ts), and why. */
  readonly handoff?: HandoffDecision;
  /** The engines it returned to placement through narwhal's readmission. */
  readonly readmission?: { readonly readmitted: readonly Readmitted[] };
}

export function textDigest(text: string): string {
  return "sha256:" + createHash("sha256").update(text).digest("hex");
}

/**
 * Where the document's `profiles.path` lands relative to the router's working folder. narwhal-serve
 * resolves a relative path against its working directory; the program only writes relative paths that
 * stay inside the router's folder.
 */
export function profileStorePath(document: Record<string, unknown>): string {
  const p = (document.profiles as { path?: unknown } | undefined)?.path;
  if (typeof p !== "string" || p === "") return "runs/profiles.json";
  if (p.startsWith("/") || p.split("/").includes("..")) {
    throw new Error(`router: the fleet document's profiles.path ${JSON.stringify(p)} must be relative and stay inside the router's folder`);
  }
  return p;
}

/** narwhal-serve on loopback: only the front, on the same host, talks to it. */
export function routerArgv(o: Pick<RouterOptions, "binDir" | "backendPort">): string[] {
  return [`${o.binDir}/narwhal-serve`, "--fleet", "fleet.json", "--host", "127.0.0.1", "--port", String(o.backendPort)];
}

/** What a router serves, as its folder's `identity` file records it: `<document digest> <store digest>`. */
export function routerIdentity(o: Pick<RouterOptions, "fleetDocument" | "profileStore" | "profileStoreDigest">): string {
  const storeDigest = o.profileStore === undefined ? (o.profileStoreDigest ?? "none") : textDigest(o.profileStore);
  return `${textDigest(o.fleetDocument)} ${storeDigest}`;
}

export function routerStartScript(o: RouterOptions): string {
  const identity = routerIdentity(o);
  const health = `http://${backendAddress(o.backendPort)}/health`;
  const where = backendAddress(o.backendPort);
  const storePath = profileStorePath(JSON.parse(o.fleetDocument) as Record<string, unknown>);
  const writeStore =
    o.profileStore === undefined
      ? ""
      : `mkdir -p "$(dirname "$run/"${shq(storePath)})"
printf '%s' ${shq(o.profileStore)} > "$run/"${shq(storePath)}".tmp"
mv -f "$run/"${shq(storePath)}".tmp" "$run/"${shq(storePath)}
`;
  const epoch = o.restartEpoch === undefined ? "" : `# liveness epoch ${o.restartEpoch}\n`;
  const python = `${o.binDir}/python`;
  const readmit = readmitLines(python, o.backendPort, o.startTimeoutS);
  return `${epoch}set -eu
${PID_FILE_SH}${FRONT_HOLD_SH}run=${shq(o.runDir)}
mkdir -p "$run" && chmod 700 "$run"
umask 077
if running=$(live_pid "$run/pid"); then
  # A start interrupted after launching: adopt the router if it serves this very document and store.
  if [ "$(cat "$run/identity" 2>/dev/null)" = ${shq(identity)} ] && [ -f "$run/started" ]; then
    cat > /dev/null
    front_release "$run/front"
${readmit}    started=$(cat "$run/started")
    printf '%s,"readmission":%s}\\n' "\${started%\\}}" "$readmitted"
    exit 0
  fi
  echo "router: pid $running already serves another fleet document from $run; stop it first" >&2
  exit 1
fi
if [ ! -x ${shq(`${o.binDir}/narwhal-serve`)} ]; then
  echo ${shq(`router: ${o.binDir}/narwhal-serve is missing; the narwhal install (Gate B) must finish first`)} >&2
  exit 1
fi
${refuseTakenPortLines({ what: "router", port: o.backendPort, configKey: "router.backendPort", hostAlias: o.hostAlias })}
if ! command -v ss >/dev/null 2>&1 && curl -sS -o /dev/null --max-time 2 ${shq(health)} 2>/dev/null; then
  echo ${shq(`router: port ${o.backendPort} on ${o.hostAlias ? `host ${o.hostAlias}` : "this host"} already answers HTTP (${where} wanted; no ss here to name its owner); stop that process or set router.backendPort to a free port, then run pulumi up again`)} >&2
  exit 1
fi
cat > "$run/router.env.tmp"
mv -f "$run/router.env.tmp" "$run/router.env"
printf '%s\\n' ${shq(o.fleetDocument)} > "$run/fleet.json.tmp"
mv -f "$run/fleet.json.tmp" "$run/fleet.json"
${writeStore}${handoffCheckLines(python, TRUST_STORE_SH)}${ATTEMPTS_SH}attempt_started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
(
  set -a; . "$run/router.env"; set +a
  cd "$run"
  ${TRUST_STORE_SH}
  exec setsid ${shellLine(routerArgv(o))} > "$run/router.log" 2>&1 < /dev/null
) &
pid=$!
record_pid "$pid" "$run/pid"
printf '%s\\n' ${shq(identity)} > "$run/identity"
deadline=$(( $(date +%s) + ${o.startTimeoutS} ))
while :; do
  body=$(curl -fsS --max-time 2 ${shq(health)} 2>/dev/null || true)
  case "$body" in *'"status":"ok"'*) break ;; esac
  if ! kill -0 "$pid" 2>/dev/null; then
    status=0; wait "$pid" 2>/dev/null || status=$?
    echo "router exited (status $status) before /health reported ready; last log lines:" >&2
    tail -n 20 "$run/router.log" >&2
    ${keepRouterAttempt(o, '"$status"', "router exited before /health reported ready")}
    forget_pid "$run/pid"; rm -f "$run/identity" "$run/router.env"
    front_release "$run/front"
    exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "router did not report ready on ${health} within router.startTimeoutS ${o.startTimeoutS}s (last answer: $body); stopped it. Last log lines:" >&2
    tail -n 20 "$run/router.log" >&2
    kill -TERM "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    ${keepRouterAttempt(o, "''", `router did not report ready within router.startTimeoutS ${o.startTimeoutS}s; stopped it`)}
    forget_pid "$run/pid"; rm -f "$run/identity" "$run/router.env"
    front_release "$run/front"
    exit 1
  fi
  sleep 0.3
done
front_release "$run/front"
# Recorded before the readmission: a start whose readmission failed is adopted next time, and readmits again.
started='{"pid":'"$pid"',"startedAt":"'"$(date -u +%Y-%m-%dT%H:%M:%SZ)"'","health":'"$body"',"handoff":'"$handoff"'}'
printf '%s\\n' "$started" > "$run/started"
list_attempts "$run/${ATTEMPTS_DIR}" ${ROUTER_LOG}
${readmit}printf '%s,"readmission":%s}\\n' "\${started%\\}}" "$readmitted"
`;
}

/** narwhal-serve's output, in the router's folder; a failed start's is kept in `attempts/` (lib/runtime/attempts.ts), never overwritten. */
export const ROUTER_LOG = "router.log";

/** Keeps a failed start's log, exit status and command line; the next start writes a fresh log. */
function keepRouterAttempt(o: RouterOptions, status: string, reason: string): string {
  return `keep_attempt "$run/${ATTEMPTS_DIR}" "$attempt_started" ${status} ${shq(reason)} ${shq(shellLine(routerArgv(o)))} "$run/${ROUTER_LOG}"`;
}

/**
 * Run before the front or the router is replaced: refuses when the public port is held by anything but
 * this router's front (or a router started before fronts, which listened there itself), so a refusal
 * leaves the router serving.
 */
export function routerPortCheckScript(o: Pick<RouterOptions, "runDir" | "port" | "hostAlias">): string {
  return portCheckScript({ what: "router", port: o.port, configKey: "router.port", hostAlias: o.hostAlias, own: { pidFiles: [`${frontDir(o.runDir)}/pid`, `${o.runDir}/pid`] } });
}

/**
 * The router on a new document or store (a `pulumi up` update, run only after the preflight that judged
 * them passed): the front holds new requests, the serving router stops only now (finishing what it took),
 * then the new one starts behind the front, which sends it the held requests.
 */
export function routerSwapScript(o: RouterOptions): string {
  return `(\n${routerStopScript(o)})\n${routerStartScript(o)}`;
}

/**
 * Stops the router's process group (SIGKILL after the stop timeout) and removes the key file; keeps
 * document, log and journal. The front holds new requests first, bounded by a stop and a start: a stop
 * is followed by a start (a swap, a replacement) unless the stack is destroyed, and then the front's own
 * stop releases them.
 */
export function routerStopScript(o: Pick<RouterOptions, "runDir" | "stopTimeoutS" | "startTimeoutS">): string {
  return `set -u
${PID_FILE_SH}${FRONT_HOLD_SH}run=${shq(o.runDir)}
front_hold "$run/front" ${o.stopTimeoutS + o.startTimeoutS + 10}
rm -f "$run/router.env"
${stopPidFileLines("router", '"$run/pid"', o.stopTimeoutS)}
forget_pid "$run/pid"; rm -f "$run/identity" "$run/started"
`;
}
