/**
 * The router's front: what listens on `router.port`, so the router behind it can be swapped without a
 * client seeing it. narwhal-serve refuses a port in use and reads its profile store only when it starts,
 * so every new store (each engine restart ends with one) means a new router process. With the front,
 * narwhal-serve listens on loopback (`router.backendPort`), and a swap is:
 *
 *   hold (the front stops forwarding and holds new requests; in-flight ones continue)
 *   -> stop the old router (SIGTERM: it finishes what it took, then exits)
 *   -> start the new one and wait for its /health
 *   -> release (the held requests go to the new router)
 *
 * A client sees a slower answer, not a failed one. The front itself (lib/router/front-py.ts) runs from
 * the router's venv and is replaced only when its own inputs change (port, backend, its code).
 */
import { createHash } from "node:crypto";
import { shellLine, shq } from "../shell";
import { PID_FILE_SH } from "../pid-file";
import { refuseTakenPortLines } from "../port-taken";
import { FRONT_PY, FRONT_STATUS_PATH } from "./front-py";
import { localAddress } from "./address";
import { readyWait } from "../ready-wait";

export interface FrontOptions {
  /** The router's folder; the front works in its `front/` folder. */
  readonly routerDir: string;
  /** The router venv's bin folder: its python has uvicorn and httpx (narwhal's own dependencies). */
  readonly binDir: string;
  readonly bindAddress: string;
  /** The public port: `router.port`. */
  readonly port: number;
  /** narwhal-serve's port on loopback: `router.backendPort`. */
  readonly backendPort: number;
  readonly startTimeoutS: number;
  readonly stopTimeoutS: number;
  /** The router host's alias, named by a refusal. */
  readonly hostAlias?: string;
  /** The router's liveness epoch: a new one (its URL, the front's, found down) runs this start again, which starts a front that is gone. */
  readonly restartEpoch?: string;
}

/** The front's folder inside the router's: pid, hold, held, its code and log. */
export function frontDir(routerDir: string): string {
  return `${routerDir}/front`;
}

/** `router.backendPort`, by default the port above the router's. */
export function routerBackendPort(router: { readonly port: number; readonly backendPort?: number }): number {
  return router.backendPort ?? router.port + 1;
}

/** Where narwhal-serve listens behind the front. */
export function backendAddress(backendPort: number): string {
  return `127.0.0.1:${backendPort}`;
}

export function frontArgv(o: Pick<FrontOptions, "routerDir" | "binDir" | "bindAddress" | "port" | "backendPort">): string[] {
  const dir = frontDir(o.routerDir);
  return [`${o.binDir}/python`, `${dir}/front.py`, "--host", o.bindAddress, "--port", String(o.port), "--backend", backendAddress(o.backendPort), "--dir", dir];
}

/** The front's code, as its identity names it: hashed once, not on every preview's script. */
const FRONT_CODE = createHash("sha256").update(FRONT_PY).digest("hex").slice(0, 16);

/** What a running front must match to be kept: its command line and its code. */
export function frontIdentity(o: Pick<FrontOptions, "routerDir" | "binDir" | "bindAddress" | "port" | "backendPort">): string {
  return `${FRONT_CODE} ${shellLine(frontArgv(o))}`;
}

/**
 * Shell functions for the router's scripts (after {@link PID_FILE_SH}):
 * - `front_hold DIR SECONDS`: while the front in DIR runs, asks it to hold new requests for at most
 *   SECONDS and waits (10 s, named) until it confirms; every request after that waits for the release.
 * - `front_release DIR`: held requests go on to whatever router serves now.
 * Both signal the front (SIGUSR1) to read its hold file again.
 */
export const FRONT_HOLD_SH = `front_hold() {
  _fh_pid=$(live_pid "$1/pid") || return 0
  _fh_until=$(( $(date +%s) + $2 ))
  printf '%s\\n' "$_fh_until" > "$1/hold.tmp" && mv -f "$1/hold.tmp" "$1/hold"
  kill -USR1 "$_fh_pid" 2>/dev/null || true
  _fh_deadline=$(( $(date +%s) + 10 ))
  until [ "$(cat "$1/held" 2>/dev/null)" = "$_fh_until" ]; do
    if [ "$(date +%s)" -ge "$_fh_deadline" ] || ! live_pid "$1/pid" > /dev/null; then
      echo "router front: did not confirm the hold within 10s; requests that arrive while the router is swapped may fail" >&2
      return 0
    fi
    sleep 0.05
  done
}
front_release() {
  rm -f "$1/hold"
  if _fr_pid=$(live_pid "$1/pid"); then kill -USR1 "$_fr_pid" 2>/dev/null || true; fi
}
`;

/**
 * Starts the front on the public port, or keeps the one running when its identity is the same. A front
 * of other inputs (another port, older code) is stopped first. A router started before the front
 * existed listens on the public port itself: it is stopped here (the router's update starts it again
 * behind the front), the one restart the move to a front costs.
 */
export function frontStartScript(o: FrontOptions): string {
  const identity = frontIdentity(o);
  const status = `http://${localAddress(o.bindAddress)}:${o.port}${FRONT_STATUS_PATH}`;
  const epoch = o.restartEpoch === undefined ? "" : `# liveness epoch ${o.restartEpoch}\n`;
  return `${epoch}set -eu
${PID_FILE_SH}${FRONT_HOLD_SH}run=${shq(o.routerDir)}
dir="$run/front"
mkdir -p "$dir" && chmod 700 "$run" "$dir"
if running=$(live_pid "$dir/pid"); then
  if [ "$(cat "$dir/identity" 2>/dev/null)" = ${shq(identity)} ] && [ -f "$dir/started" ]; then
    cat "$dir/started"
    exit 0
  fi
  front_release "$dir"
  stop_group "$running" "router front" ${o.stopTimeoutS}
  forget_pid "$dir/pid"; rm -f "$dir/identity" "$dir/started"
fi
if [ ! -x ${shq(`${o.binDir}/python`)} ]; then
  echo ${shq(`router front: ${o.binDir}/python is missing; the narwhal install (Gate B) must finish first`)} >&2
  exit 1
fi
own=$(live_pid "$run/pid" || true)
${refuseTakenPortLines({ what: "router", port: o.port, configKey: "router.port", hostAlias: o.hostAlias, own: { pidFile: `${o.routerDir}/pid` } })}
if [ -n "$own" ] && command -v ss > /dev/null 2>&1 && [ -n "$(ss -Hltn "sport = :${o.port}" 2>/dev/null)" ]; then
  # A router that still listens on the public port itself: the router's update starts it behind the front.
  stop_group "$own" router ${o.stopTimeoutS}
  forget_pid "$run/pid"; rm -f "$run/identity" "$run/started" "$run/router.env"
fi
cat > "$dir/front.py.tmp" <<'NARWHAL_FRONT_EOF'
${FRONT_PY}
NARWHAL_FRONT_EOF
mv -f "$dir/front.py.tmp" "$dir/front.py"
rm -f "$dir/hold" "$dir/held"
(
  cd "$dir"
  exec setsid ${shellLine(frontArgv(o))} > "$dir/front.log" 2>&1 < /dev/null
) &
pid=$!
record_pid "$pid" "$dir/pid"
${readyWait(status, "router front", o.startTimeoutS, 'kill -0 "$pid" 2>/dev/null', 'tail -n 20 "$dir/front.log" >&2', 'kill -TERM "-$pid" 2>/dev/null || true; forget_pid "$dir/pid"')}
printf '%s\\n' ${shq(identity)} > "$dir/identity"
printf '{"pid":%s,"startedAt":"%s"}\\n' "$pid" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$dir/started"
cat "$dir/started"
`;
}

/** Releases any hold (held requests then fail fast instead of keeping the stop waiting), then stops the front. */
export function frontStopScript(o: Pick<FrontOptions, "routerDir" | "stopTimeoutS">): string {
  return `set -u
${PID_FILE_SH}${FRONT_HOLD_SH}dir=${shq(frontDir(o.routerDir))}
front_release "$dir"
if pid=$(live_pid "$dir/pid"); then stop_group "$pid" "router front" ${o.stopTimeoutS}; fi
forget_pid "$dir/pid"; rm -f "$dir/identity" "$dir/started" "$dir/held"
`;
}
