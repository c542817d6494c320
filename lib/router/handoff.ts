/**
 * Readmission through narwhal's own lifecycle across a router swap. narwhal-serve 0.7.0 reads its profile
 * store only when it starts, so an engine restarted on a new process (profiled again) needs a new router.
 * The serving router held that engine out (the drain, lib/router/drain.ts, or an ejection when it died);
 * on its way out it writes its control-plane handoff (`recovery.state_path`), and the new one, started
 * with `recovery.resume`, restores those holds. The engine then returns through narwhal's readmission,
 * which validates it against the new store: health, a new process identity, attestation, profile
 * generation, model, one generation and a fabric handoff with a serving peer of the other role, then
 * final health. Every other engine serves from the new router's first request.
 *
 * narwhal applies a handoff only when it fits, and a contract fleet whose handoff does not fit is held
 * out whole until an operator restarts it (`require_restart_wave`). So before the new router starts,
 * {@link HANDOFF_PY} keeps the handoff only where the new router would apply it and could readmit what it
 * holds one engine at a time; otherwise it sets the file aside and the new router starts with every engine
 * in placement, each checked at its start (a whole wave's restart, whose engines have no serving peer to
 * be validated against). After the start, {@link READMIT_PY} readmits what the handoff held.
 */
import { shq } from "../shell";
import { LIFECYCLE_ASK_PY } from "./lifecycle-py";

/** The router document's `recovery` settings this program adds: resume from the serving router's handoff. */
export function withResume(recovery: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...recovery, resume: true };
}

/** What the handoff check decided, as the router's `started` record keeps it. */
export interface HandoffDecision {
  readonly kept: boolean;
  readonly reason: string;
}

/** One engine the new router readmitted: by the program's `readmit` (one the handoff held: drained, or blocked by a failed check) or by narwhal's own recovery probe (an ejected one). */
export interface Readmitted {
  readonly iid: string;
  readonly by: "readmit" | "recovery";
  readonly checks: readonly string[];
}

/**
 * Run in the router's folder with its environment (the engine key), by the router venv's python, before
 * narwhal-serve starts: prints one JSON line, {@link HandoffDecision}. Keeps `recovery.state_path` when
 * narwhal's `apply` would take it (same engines, the `individual` policy, no wave, a process identity for
 * every engine left in placement) and narwhal could readmit what it holds: every engine left in placement
 * still runs the process the serving router verified (else narwhal would eject it at start), every held
 * engine drained for a restart did restart, and each role keeps an engine in placement to validate the
 * held ones against. Anything else, a file it cannot read included, is renamed `<file>.discarded`.
 */
export const HANDOFF_PY = String.raw`import asyncio, json, os, sys
from pathlib import Path

def decided(kept, reason):
    print(json.dumps({"kept": kept, "reason": reason}))
    sys.exit(0)

try:
    from narwhal.config.loading import load
    from narwhal.engines.attestation import fetch_spec_identity
    from narwhal.runtime import state as handoff
    cfg = load(sys.argv[1])
    path = Path(cfg.state_path)
except Exception as e:
    path = Path("runs/state.json")
    if path.exists():
        os.replace(path, path.with_name(path.name + ".discarded"))
    decided(False, "the fleet document could not be read to judge the handoff (%s: %s); set it aside" % (type(e).__name__, e))

def discard(reason):
    os.replace(path, path.with_name(path.name + ".discarded"))
    decided(False, reason + "; set it aside, every engine starts in placement")

if not path.exists():
    decided(False, "the serving router left no handoff")
try:
    doc = handoff.load(path)
except Exception as e:
    discard("the handoff is invalid (%s: %s)" % (type(e).__name__, e))
if doc is None:
    discard("the handoff is torn or unreadable")
specs = {s.iid: s for s in cfg.engines}
if sorted(doc.get("engines") or []) != sorted(specs):
    discard("the handoff names engines %s, this fleet is %s" % (sorted(doc.get("engines") or []), sorted(specs)))
life = doc["lifecycle"]
if cfg.engine_restart_policy != "individual" or life["engine_restart_policy"] != "individual":
    discard("narwhal's whole_wave policy readmits only a whole wave")
if life.get("wave_id"):
    discard("the handoff holds a whole wave")
records = {r["iid"]: r for r in life["records"]}
held = sorted(i for i, r in records.items() if r.get("state") != "active")
ejected = sorted((set(doc.get("ejected") or []) | set(doc.get("inference_sources") or {})) - set(held))
placed = sorted(set(specs) - set(held) - set(ejected))
starts = life.get("process_starts") or {}

async def identities():
    async def one(iid):
        try:
            return (await fetch_spec_identity(cfg, specs[iid])).process_start_time_seconds
        except Exception as e:
            return "%s: %s" % (type(e).__name__, e)
    names = placed + held
    return dict(zip(names, await asyncio.gather(*(one(i) for i in names))))

live = asyncio.run(identities())
for iid in placed:
    if iid not in starts:
        discard("the handoff has no process identity for %s, which it leaves in placement" % iid)
    if not isinstance(live[iid], float):
        discard("%s's process identity could not be read (%s)" % (iid, live[iid]))
    if live[iid] != starts[iid]:
        discard("%s runs another process than the serving router verified (it restarted undrained: a wave)" % iid)
for iid in held:
    old = records[iid].get("old_process_start")
    if records[iid].get("restart_required") and old is not None and live[iid] == old:
        discard("%s was drained for a restart that did not happen" % iid)
roles = {iid: (s.role.value if s.pin else (doc.get("roles") or {}).get(iid, s.role.value)) for iid, s in specs.items()}
for role in sorted(set(roles.values())):
    if (held or ejected) and not any(roles[i] == role for i in placed):
        discard("no %s engine would stay in placement to validate %s against" % (role, ", ".join(held + ejected)))
if not held and not ejected:
    decided(True, "the serving router held no engine out")
decided(True, "; ".join(part for part in (
    "holds %s out for readmission (drained)" % ", ".join(held) if held else "",
    "holds %s out for narwhal's recovery probe (ejected)" % ", ".join(ejected) if ejected else "",
) if part))
`;

/**
 * Run on the router host after the new router reported ready: returns to placement every engine the
 * handoff held. A drained one is readmitted with `POST /narwhal/lifecycle/readmit` (narwhal's validation,
 * one engine at a time as its `individual` policy requires); an ejected one returns through narwhal's own
 * recovery probe, which the handoff made due at once. Prints one JSON line, `{"readmitted": [...]}`, or
 * exits 1 naming each engine narwhal refused and why; the router keeps serving on the others.
 */
export const READMIT_PY = String.raw`import json, sys, time, urllib.error, urllib.request
port, bound = int(sys.argv[1]), float(sys.argv[2])
base = "http://127.0.0.1:%d/narwhal/lifecycle" % port

timeout = bound
${LIFECYCLE_ASK_PY}
def lifecycle(path="", body=None):
    try:
        return ask(path, body)
    except OSError as e:
        print("router: the new router's lifecycle did not answer on 127.0.0.1:%d (%s)" % (port, type(e).__name__), file=sys.stderr)
        sys.exit(1)

def why(engine):
    return engine.get("error") or engine.get("state") or "no reason given"

until = time.monotonic() + bound
status, doc = lifecycle()
engines = doc.get("engines", {})
back, refused = [], {}
# Held by a drain (or a validation the swap cut short): the program readmits it. Out otherwise (ejected,
# or already in narwhal's own recovery validation): narwhal's probe readmits it.
HELD = ("draining", "drained", "deadline_exceeded", "blocked")
for iid in sorted(i for i, e in engines.items() if e.get("state") in HELD):
    status, answer = lifecycle("/readmit", {"engines": [iid]})
    engine = answer.get("engines", {}).get(iid, {})
    if status == 200 and engine.get("accepts_new"):
        back.append({"iid": iid, "by": "readmit", "checks": engine.get("checks", [])})
    else:
        refused[iid] = "narwhal refused its readmission (%d): %s" % (status, why(engine) if engine else answer.get("error") or "no reason given")
probed = sorted(i for i, e in engines.items() if e.get("state") not in HELD and not e.get("accepts_new"))
while probed:
    status, doc = lifecycle()
    engines = doc.get("engines", {})
    for iid in probed:
        if engines.get(iid, {}).get("state") == "blocked" and iid not in refused:
            refused[iid] = "narwhal's recovery probe held it out: %s" % why(engines[iid])
    if all(engines.get(i, {}).get("accepts_new") or i in refused for i in probed):
        break
    if time.monotonic() > until:
        for iid in probed:
            if not engines.get(iid, {}).get("accepts_new") and iid not in refused:
                refused[iid] = "narwhal's recovery probe did not readmit it within router.startTimeoutS %gs (%s)" % (bound, why(engines.get(iid, {})))
        break
    time.sleep(0.3)
back += [{"iid": i, "by": "recovery", "checks": engines[i].get("checks", [])} for i in probed if i not in refused]
if refused:
    for iid, reason in sorted(refused.items()):
        print("router: engine %s stays out of placement while the other engines serve: %s" % (iid, reason), file=sys.stderr)
    sys.exit(1)
print(json.dumps({"readmitted": back}))
`;

/** The handoff check's lines in the router's start script: `$handoff` holds its decision. */
export function handoffCheckLines(python: string, envLines: string): string {
  return `handoff=$(
  set -a; . "$run/router.env"; set +a
  cd "$run"
  ${envLines}
  ${shq(python)} -c ${shq(HANDOFF_PY)} fleet.json 2> "$run/handoff.log" | tail -n 1
) || true
case "$handoff" in
  '{"kept": '*) ;;
  *) [ ! -f "$run/runs/state.json" ] || mv -f "$run/runs/state.json" "$run/runs/state.json.discarded"
     handoff='{"kept": false, "reason": "the handoff check failed (see handoff.log in the router folder); set the handoff aside"}' ;;
esac
`;
}

/** The readmission's lines, after the router reported ready: `$readmitted` holds its JSON, or the script stops naming the refusals. */
export function readmitLines(python: string, backendPort: number, boundS: number): string {
  return `if ! readmitted=$(${shq(python)} -c ${shq(READMIT_PY)} ${backendPort} ${boundS}); then
  echo "router: the new router serves, but narwhal did not readmit every engine its handoff held out. Fix: see each engine's reason above and the router's /narwhal/lifecycle, then run pulumi up again" >&2
  exit 1
fi
`;
}
