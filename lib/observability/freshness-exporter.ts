/**
 * The evidence-freshness exporter beside Prometheus on the router host: on every scrape it asks the live
 * fleet whether it still matches the evidence the last `pulumi up` recorded (`expected.json`, written by
 * the program), and answers `narwhal_evidence_fresh{iid,gate}` 1 or 0:
 *
 * - generation:  the engine's live `process_start_time_seconds` equals the proved process's start;
 * - attestation: its sidecar answers `/v1/attestation` with the recorded `attestation_digest`;
 * - profile:     the router's profile store row for the engine binds what the sidecar binds now
 *                (`launch_digest`, else `attestation_digest`: narwhal's `binding_digest`);
 * - router:      the router process recorded in its folder is alive and serves the recorded fleet
 *                document and store (its `identity` file).
 *
 * Python's standard library only (the router host has Python for narwhal); every probe is bounded.
 */
export const FRESHNESS_JOB = "narwhal-evidence";
export const FRESHNESS_METRIC = "narwhal_evidence_fresh";

/** What the live fleet must still match: written to `expected.json` after every converged `up`. */
export interface FreshnessExpectation {
  /** The router's folder: `pid` and `identity` (`<document digest> <store digest>`). */
  readonly routerDir: string;
  readonly routerIdentity: string;
  /** The profile store as the router reads it. */
  readonly profileStorePath: string;
  readonly engines: ReadonlyArray<{
    readonly iid: string;
    /** The engine's base URL (its `/metrics` is open, as vLLM's is). */
    readonly url: string;
    readonly processStartTime: number;
    /** The attestation sidecar's `/v1/attestation` URL, as the fleet document names it. */
    readonly attestationUrl: string;
    readonly attestationDigest: string;
  }>;
}

export const FRESHNESS_EXPORTER_PY = String.raw`"""narwhal-fleet evidence freshness exporter: see lib/observability/freshness-exporter.ts."""
import argparse, json, os, re, time, urllib.error, urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

METRIC = "narwhal_evidence_fresh"


def get(url, timeout):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, ""
    except Exception:
        return None, ""


def start_time(text):
    m = re.search(r"^process_start_time_seconds(?:\{[^}]*\})?\s+(\S+)", text, re.M)
    return float(m.group(1)) if m else None


def profile_rows(path):
    try:
        with open(path) as f:
            store = json.load(f)
    except Exception:
        return {}
    rows = store.get("profiles", []) if isinstance(store, dict) else store
    return {r.get("iid"): r for r in rows if isinstance(r, dict)}


def live_pid(pid_file):
    """The pid the file names while that very process runs (lib/pid-file.ts's live_pid), else None."""
    try:
        pid = int(open(pid_file).read().strip())
    except (OSError, ValueError):
        return None
    try:
        stat = open("/proc/%d/stat" % pid).read()
        fields = stat[stat.rindex(")") + 2:].split()
        boot = open("/proc/sys/kernel/random/boot_id").read().strip()
    except (OSError, ValueError):
        return None
    if fields[0] in ("Z", "X"):
        return None
    try:
        record = open(pid_file + ".start").read().split()
    except OSError:
        record = []
    if record[:1] == [str(pid)] and record != [str(pid), boot, fields[19]]:
        return None
    return pid


def router_fresh(expected):
    d = expected["routerDir"]
    if live_pid(os.path.join(d, "pid")) is None:
        return False
    try:
        return open(os.path.join(d, "identity")).read().strip() == expected["routerIdentity"]
    except OSError:
        return False


def engine_checks(e, rows, timeout):
    status, text = get(e["url"].rstrip("/") + "/metrics", timeout)
    started = start_time(text) if status == 200 else None
    status, body = get(e["attestationUrl"], timeout)
    answer = {}
    if status == 200:
        try:
            answer = json.loads(body)
        except ValueError:
            answer = {}
    binding = answer.get("launch_digest") or answer.get("attestation_digest")
    row = rows.get(e["iid"]) or {}
    return {
        "generation": started is not None and started == float(e["processStartTime"]),
        "attestation": answer.get("attestation_digest") == e["attestationDigest"],
        "profile": binding is not None and row.get("generation_digest") == binding,
    }


def render(expected_path, timeout):
    lines = [
        "# HELP %s 1 while the live fleet still matches the evidence the last pulumi up recorded, else 0." % METRIC,
        "# TYPE %s gauge" % METRIC,
    ]
    t0 = time.time()
    try:
        with open(expected_path) as f:
            expected = json.load(f)
    except Exception:
        lines.append("narwhal_evidence_expected_readable 0")
        return "\n".join(lines) + "\n"
    rows = profile_rows(expected["profileStorePath"])
    engines = expected["engines"]
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(engines)))) as pool:
        results = list(pool.map(lambda e: engine_checks(e, rows, timeout), engines))
    for e, checks in zip(engines, results):
        for gate, ok in checks.items():
            lines.append('%s{iid="%s",gate="%s"} %d' % (METRIC, e["iid"], gate, 1 if ok else 0))
    lines.append('%s{gate="router"} %d' % (METRIC, 1 if router_fresh(expected) else 0))
    lines.append("narwhal_evidence_expected_readable 1")
    lines.append("narwhal_evidence_check_seconds %.3f" % (time.time() - t0))
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--expected", required=True)
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--probe-timeout", type=float, default=2.0)
    a = p.parse_args()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path not in ("/metrics", "/health"):
                self.send_error(404)
                return
            body = (render(a.expected, a.probe_timeout) if self.path == "/metrics" else "ok\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    ThreadingHTTPServer((a.host, a.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
`;

export interface FreshnessRunOptions {
  /** Folder on the router host: exporter.py, expected.json, pid, log. */
  readonly dir: string;
  readonly port: number;
  readonly startTimeoutS: number;
  readonly stopTimeoutS: number;
  readonly hostAlias?: string;
}

export function freshnessArgv(o: Pick<FreshnessRunOptions, "dir" | "port">): string[] {
  return ["python3", `${o.dir}/exporter.py`, "--expected", `${o.dir}/expected.json`, "--port", String(o.port)];
}
