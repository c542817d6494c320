import { expect } from "chai";
import { request } from "undici";
import { runInHost } from "../../../sim/hosts";

/**
 * Restarts an engine by hand with its own launch record, as an operator or a supervisor would. Returns the
 * URL that record serves (after a failed up the stack's outputs may still name an earlier one).
 */
export async function restartByHand(stack: string, id: string, host: string): Promise<string> {
  const run = `/var/lib/narwhal-fleet/${stack}/engines/${id}`;
  const script = `
    set -eu
    run=${run}
    pid=$(cat "$run/pid")
    # An engine that crashed (a NIXL segfault, vLLM #49238) has no process left to stop.
    kill -TERM "-$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    argv=$(python3 -c 'import json,shlex,sys; p=json.load(open(sys.argv[1])); print(" ".join(shlex.quote(a) for a in ["env"] + [k+"="+v for k,v in p["env"].items()] + ["setsid"] + p["argv"]))' "$run/launch.json")
    (set -a; . "$run/engine.env"; set +a; cd "$run"; eval "exec $argv" > "$run/engine.log" 2>&1 < /dev/null) &
    echo $! > "$run/pid"
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$run/launch.json"
  `;
  const r = await runInHost(host, ["sh", "-c", script]);
  expect(r.code, r.stderr).to.equal(0);
  return r.stdout.trim();
}

/** Waits, bounded, until an engine answers its health check again after a restart. */
export async function awaitHealthy(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await request(`${url}/health`).then((r) => r.statusCode === 200, () => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`engine at ${url} not healthy within ${timeoutMs} ms of its restart`);
}

/**
 * The runbook's rule after any engine restart: its NIXL peers keep the old process's state until they
 * restart too (with NIXL below 1.5.0 a peer's next handshake after the UCX endpoint timeout segfaults it,
 * vLLM #49238). Restarts the given engines at once, as one wave, and waits for each.
 */
export async function restartWaveByHand(stack: string, ids: readonly string[], engines: Record<string, { host: string }>): Promise<void> {
  const urls = await Promise.all(ids.map((id) => restartByHand(stack, id, engines[id].host)));
  await Promise.all(urls.map((url) => awaitHealthy(url)));
}
