/**
 * Draining one engine on the serving router before the program stops it (narwhal's
 * `POST /narwhal/lifecycle/drain`): the router places no new request on it, the requests it holds finish,
 * and only then does its process stop, so a planned restart (a new plan, an upgraded runtime) fails no
 * request where the engine's role has another engine to serve.
 *
 * Readmission follows on the router swapped onto the profile store that profiles the new process (this
 * program's profiles bind the process, and narwhal reads its store only at start): the new router takes
 * over this drain from the serving one's handoff and readmits the engine through narwhal's own
 * validation (lib/router/handoff.ts).
 *
 * Narwhal calls an engine ready to stop once the router holds no request on it, which for a prefill
 * engine is once its prefills answered: a decode engine may still be reading their KV blocks, and a
 * stop then cuts that read. So the drain also waits until the engine's own `/metrics` (unguarded by
 * `--api-key` in vLLM) shows no request running or waiting and no KV cache in use: the blocks were read
 * or their lease (`kv_lease_duration`) ran out, whichever comes first. vLLM's `--shutdown-timeout` would
 * wait for the same reads on SIGTERM, but it also answers every new request as aborted while `/health`
 * stays 200, which fails requests at an engine stopped without a drain (a whole KV wave).
 *
 * A drain is best effort, never a reason to keep an engine from its restart: with no router serving, an
 * engine the router already holds out, or a drain the router refuses (narwhal holds one engine at a time;
 * it refuses the last schedulable engine), the restart goes ahead as before and the outcome says why.
 * Runs on the router host with the router venv's Python (stdlib only), against narwhal-serve on loopback.
 */
import { flagValue } from "../image-check/request";
import { shq } from "../shell";
import { LIFECYCLE_ASK_PY } from "./lifecycle-py";

export interface DrainOptions {
  /** The router venv's python (the narwhal install's bin folder). */
  readonly python: string;
  /** narwhal-serve's loopback port (`router.backendPort`). */
  readonly backendPort: number;
  readonly engineId: string;
  /** narwhal's drain deadline: how long the engine's requests may take to finish. */
  readonly deadlineS: number;
  /** The engine's URL as the router reaches it (the plan's), whose /metrics says when its KV is released. */
  readonly engineUrl: string;
  /** The plan's `kv_lease_duration`: held blocks are freed by then, read or not. */
  readonly kvLeaseS: number;
}

export interface DrainOutcome {
  /** True once the router held no request on the engine and took no new one. */
  readonly drained: boolean;
  readonly reason: string;
  /** Seconds from the drain until the router called the engine ready to stop and its KV was released. */
  readonly waitedS?: number;
}

/** vLLM's default `kv_lease_duration` when the plan's connector config names none. */
const VLLM_KV_LEASE_S = 30;

/** The `kv_lease_duration` of a plan's `--kv-transfer-config`, else vLLM's default. */
export function kvLeaseOf(argv: ReadonlyArray<string>): number {
  try {
    const lease = (JSON.parse(flagValue(argv, "--kv-transfer-config") ?? "{}") as { kv_connector_extra_config?: { kv_lease_duration?: unknown } }).kv_connector_extra_config?.kv_lease_duration;
    return typeof lease === "number" && lease > 0 ? lease : VLLM_KV_LEASE_S;
  } catch {
    return VLLM_KV_LEASE_S;
  }
}

/** The bound of the whole drain: narwhal's deadline, then the KV lease, each with the script's slack. */
export function drainBoundS(o: Pick<DrainOptions, "deadlineS" | "kvLeaseS">): number {
  return o.deadlineS + o.kvLeaseS + DRAIN_SLACK_S;
}

/** Slack past narwhal's deadline for the script's own polling and the SSH round trip. */
export const DRAIN_SLACK_S = 15;

export const DRAIN_PY = String.raw`import json, sys, time, urllib.error, urllib.request
port, iid, deadline, metrics, lease = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4], float(sys.argv[5])
base = "http://127.0.0.1:%d/narwhal/lifecycle" % port
WATCHED = ("vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting")

def done(drained, reason, **extra):
    print(json.dumps(dict(drained=drained, reason=reason, **extra)))
    sys.exit(0)

def in_use():
    # The engine's own gauges, summed over their label sets: zero once nothing runs and no block is held.
    with urllib.request.urlopen(metrics, timeout=5) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.split("{", 1)[0].split(" ", 1)[0] in WATCHED:
            total += float(line.rsplit(" ", 1)[1])
    return total

def released():
    # A prefill engine's blocks stay held until a decode reads them or their lease ends.
    until = time.monotonic() + lease + 5
    while True:
        try:
            if in_use() == 0:
                return "and it holds no KV blocks"
        except (OSError, ValueError) as e:
            return "and its /metrics did not answer (%s): nothing held to wait for" % type(e).__name__
        if time.monotonic() > until:
            return "but its KV cache was still in use 5 s past the KV lease"
        time.sleep(0.2)

timeout = deadline + 5
${LIFECYCLE_ASK_PY}
try:
    status, doc = ask()
except OSError as e:
    done(False, "no router answers on 127.0.0.1:%d (%s): nothing to drain" % (port, type(e).__name__))
engine = doc.get("engines", {}).get(iid) if status == 200 else None
if engine is None:
    done(False, "the serving router does not place engine %s (lifecycle answered %d)" % (iid, status))
if not engine.get("accepts_new"):
    done(False, "the serving router already holds %s out of placement (%s)" % (iid, engine.get("state")))
status, doc = ask("/drain", {"engines": [iid], "deadline_s": deadline})
if status != 200:
    done(False, "the serving router refused the drain (%d): %s" % (status, doc.get("error") or "no reason given"))
began = time.monotonic()
while True:
    engine = doc.get("engines", {}).get(iid, {})
    waited = round(time.monotonic() - began, 1)
    if engine.get("ready_to_stop"):
        held = released()
        done(True, "the serving router placed nothing new on %s and its requests finished, %s" % (iid, held), waitedS=round(time.monotonic() - began, 1))
    if engine.get("state") in ("deadline_exceeded", "blocked"):
        done(False, "%s: %s" % (engine.get("state"), engine.get("error") or "no reason given"), waitedS=waited)
    if waited > deadline + 5:
        done(False, "the serving router did not call %s ready to stop within %ss" % (iid, deadline), waitedS=waited)
    time.sleep(0.2)
    try:
        status, doc = ask()
    except OSError as e:
        done(False, "the serving router stopped answering during the drain (%s)" % type(e).__name__, waitedS=waited)
`;

/** The script the router host runs: one JSON line, the outcome; exit 0 whatever the router answered. */
export function drainScript(o: DrainOptions): string {
  return `if [ ! -x ${shq(o.python)} ]; then
  echo ${shq(JSON.stringify({ drained: false, reason: `no router installed on this host (${o.python} is missing): nothing to drain` }))}
  exit 0
fi
exec ${shq(o.python)} -c ${shq(DRAIN_PY)} ${o.backendPort} ${shq(o.engineId)} ${o.deadlineS} ${shq(`${o.engineUrl}/metrics`)} ${o.kvLeaseS}
`;
}

/** The outcome the script printed last; a run that printed none is not a drain. */
export function parseDrainOutcome(stdout: string): DrainOutcome {
  const line = stdout.trim().split("\n").reverse().find((l) => l.startsWith("{"));
  if (line) {
    try {
      const o = JSON.parse(line) as Partial<DrainOutcome>;
      if (typeof o.drained === "boolean" && typeof o.reason === "string") return { drained: o.drained, reason: o.reason, ...(typeof o.waitedS === "number" ? { waitedS: o.waitedS } : {}) };
    } catch {
      // Not an outcome: fall through.
    }
  }
  return { drained: false, reason: `the drain printed no outcome${stdout.trim() ? `: ${stdout.trim().split("\n").slice(-2).join(" | ")}` : ""}` };
}
