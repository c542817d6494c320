import { expect } from "chai";
import { request } from "undici";
import { sharedFleet } from "./support/stack";
import { plannedChanges } from "./support/preview";
import { runInHost } from "../../sim/hosts";

interface EngineOut { host: string; url: string; pid: number }

/** Restarts an engine by hand with its own launch record, as an operator or a supervisor would. */
async function restartByHand(stack: string, id: string, host: string): Promise<void> {
  const run = `/var/lib/narwhal-fleet/${stack}/engines/${id}`;
  const script = `
    set -eu
    run=${run}
    pid=$(cat "$run/pid")
    kill -TERM "-$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    argv=$(python3 -c 'import json,shlex,sys; p=json.load(open(sys.argv[1])); print(" ".join(shlex.quote(a) for a in ["env"] + [k+"="+v for k,v in p["env"].items()] + ["setsid"] + p["argv"]))' "$run/launch.json")
    (set -a; . "$run/engine.env"; set +a; cd "$run"; eval "exec $argv" > "$run/engine.log" 2>&1 < /dev/null) &
    echo $! > "$run/pid"
  `;
  const r = await runInHost(host, ["sh", "-c", script]);
  expect(r.code, r.stderr).to.equal(0);
}

describe("e2e: an engine restarted with the same plan", function () {
  this.timeout(300_000);

  it("invalidates that engine's generation and cache capture, and nothing of the other engines", async () => {
    const { stack } = await sharedFleet();
    expect([...(await plannedChanges(stack, { refresh: true })).keys()]).to.deep.equal([]);

    const engines = (await stack.outputs()).engines!.value as Record<string, EngineOut>;
    const e2 = engines.e2!;
    await restartByHand("e2e", "e2", e2.host);
    for (let i = 0; i < 100; i++) {
      const ok = await request(`${e2.url}/health`).then((r) => r.statusCode === 200, () => false);
      if (ok) break;
      await new Promise((r) => setTimeout(r, 200));
    }

    const steps = await plannedChanges(stack, { refresh: true });
    expect(steps.get("fleet-e2-generation")).to.deep.include({ op: "replace", keys: ["generation"] });
    expect(steps.get("fleet-e2-cache")?.op).to.equal("replace");
    // Its sidecar watched the old process and its attestation bound the old generation (Gate E).
    expect(steps.get("fleet-attestation-e2")?.op).to.equal("replace");
    expect([...steps.keys()].sort()).to.deep.equal(["fleet-attestation-e2", "fleet-attestation-e2-sidecar", "fleet-e2-cache", "fleet-e2-generation"]);

    await stack.up({ refresh: true });
    expect([...(await plannedChanges(stack, { refresh: true })).keys()]).to.deep.equal([]);
  });
});
