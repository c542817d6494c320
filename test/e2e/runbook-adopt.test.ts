/**
 * e2e: an engine the runbook's launcher started (its launch directory with launch.json, checked.json,
 * the private engine.env and native-process.json; the process a session leader on the host) is adopted
 * by the first `up` of a stack naming that directory when it serves the program's plan: same pid, same
 * start, generation evidence recording the adoption. An engine started with another plan is replaced,
 * and the stack output names the differing field. Uses the AMD host sim3 with its own ports, outside
 * the shared fleet's hosts.
 */
import { expect } from "chai";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { runInHost, simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import type { LaunchPlan } from "../../lib/launch/plan";
import { runbookEnv, runbookPlan } from "../unit/launch/runbook-record";
import { shellLine, shq } from "../../lib/shell";
import { API_KEY, E2E_TIME_SCALE, EngineEntry, openStack, PROJECT_ROOT, sharedFleet } from "./support/stack";
import { expectNarwhalCheckAgrees } from "./support/narwhal-check";
import { awaitHealthy } from "./support/restart";

const STACK = "e2e-runbook";
const RUN = "/srv/runbook/runs/engine-launch-e2e";
const quiet = { onOutput: () => undefined };

interface EngineOut {
  url: string;
  pid: number;
  runbook?: { action: string; reason: string; differences: Array<{ field: string; runbook: string; program: string }> };
}

describe("e2e: engines the runbook's launcher already runs", function () {
  this.timeout(1_800_000);
  let host: SimHost;
  let stack: Stack;
  let engines: EngineEntry[];
  /** The plan the program derives for e1 on this host, from the first up (the same in both cases). */
  let plan: LaunchPlan;

  async function inHost(script: string, input?: string): Promise<string> {
    const r = await runInHost(host.alias, ["sh", "-c", script], { input });
    expect(r.code, r.stderr).to.equal(0);
    return r.stdout.trim();
  }

  /** The plan the program runs for e1, read from its own run folder after an up. */
  async function programPlan(): Promise<LaunchPlan> {
    return JSON.parse(await inHost(`cat /var/lib/narwhal-fleet/${STACK}/engines/e1/launch.json`)) as LaunchPlan;
  }

  /** `launch_engine prepare` + `check` + `start --run` of a native launch, with the launcher's records. */
  async function runbookStart(plan: LaunchPlan, flags: Record<string, string> = {}): Promise<{ pid: number; startTicks: string }> {
    const launchText = JSON.stringify(runbookPlan(plan, { backend: "native", flags }), null, 2) + "\n";
    const sha = createHash("sha256").update(launchText).digest("hex");
    const env = runbookEnv(plan, API_KEY);
    // The process runs the changed flags too, so the engine really serves the launch.json it records.
    const argv = [...plan.argv];
    for (const [flag, value] of Object.entries(flags)) argv[argv.indexOf(flag) + 1] = value;
    const out = await inHost(
      `set -eu
umask 077
run=${shq(RUN)}
# A runbook engine left by an earlier run goes first: the launcher's record names its process group.
old=$(sed -n 's/.*"pid": *\\([0-9]*\\).*/\\1/p' "$run/native-process.json" 2>/dev/null || true)
if [ -n "$old" ]; then kill -KILL "-$old" 2>/dev/null || true; fi
rm -rf "$run" && mkdir -p "$run"
cat > "$run/launch.json"
printf '%s\\n' ${shq(JSON.stringify({ plan_sha256: sha, backend: "native", vllm_api_version: "0.29.0" }))} > "$run/checked.json"
printf '%s' ${shq(Object.entries(env).map(([k, v]) => `${k}=${v}\n`).join(""))} > "$run/engine.env"
(cd "$run" && exec env ${shellLine(Object.entries(env).map(([k, v]) => `${k}=${v}`))} setsid ${shellLine(argv)} > "$run/startup.log" 2>&1 < /dev/null) &
pid=$!
stat=$(cat /proc/$pid/stat); set -- \${stat##*) }
printf '{\\n  "pid": %s,\\n  "boot_id": "%s",\\n  "start_ticks": %s\\n}\\n' "$pid" "$(cat /proc/sys/kernel/random/boot_id)" "\${20}" > "$run/native-process.json"
echo "$pid \${20}"`,
      launchText,
    );
    const [pid, startTicks] = out.split(" ");
    await awaitHealthy(plan.url, 60_000);
    return { pid: Number(pid), startTicks: startTicks! };
  }

  async function startTicksOf(pid: number): Promise<string | undefined> {
    const r = await runInHost(host.alias, ["sh", "-c", `stat=$(cat /proc/${pid}/stat) || exit 0; set -- \${stat##*) }; case $1 in Z|X) ;; *) echo "\${20}" ;; esac`], { allowFail: true });
    return r.stdout.trim() || undefined;
  }

  async function withRunbookRun(on: boolean): Promise<void> {
    await stack.setConfig("narwhal-fleet:engines", { value: JSON.stringify(engines.map((e) => (e.id === "e1" && on ? { ...e, runbookRun: RUN } : e))) });
  }

  before(async () => {
    // The shared fleet first, so both agree on which hosts are up.
    await sharedFleet();
    host = (await simUp({ hosts: 4, timeScale: E2E_TIME_SCALE })).hosts.find((h) => h.alias === "sim3")!;
    engines = [
      { id: "e1", host: host.alias, gpuIds: [0], port: 8601, attestationPort: 8611, nixlPort: 5991 },
      { id: "e2", host: host.alias, gpuIds: [1], port: 8602, attestationPort: 8612, nixlPort: 5992 },
    ];
    stack = await openStack(STACK, [host], engines, { model: { servedName: "tiny-llama", checkpointDir: host.modelDir } });
    await stack.destroy(quiet);
    // The program's first up tells the test which plan it derives for e1 on this host.
    await stack.up(quiet);
    plan = await programPlan();
  });

  after(async () => {
    if (!stack) return;
    await stack.destroy(quiet);
    await runInHost(host.alias, ["sh", "-c", `[ -f ${RUN}/native-process.json ] && kill -KILL "-$(sed -n 's/.*"pid": *\\([0-9]*\\).*/\\1/p' ${RUN}/native-process.json)" 2>/dev/null; rm -rf /srv/runbook`], { allowFail: true });
  });

  it("adopts the runbook's engine serving the program's plan without restarting it, and records the adoption", async () => {
    await stack.destroy(quiet);
    const runbook = await runbookStart(plan);

    const dir = path.join(PROJECT_ROOT, "runs", STACK, "evidence", "generation");
    const earlier = new Set(fs.existsSync(dir) ? fs.readdirSync(dir) : []);
    await withRunbookRun(true);
    await stack.up(quiet);
    await expectNarwhalCheckAgrees(stack);
    const e1 = ((await stack.outputs()).engines!.value as Record<string, EngineOut>).e1!;
    expect(e1.runbook?.action, e1.runbook?.reason).to.equal("adopt");
    expect(e1.pid).to.equal(runbook.pid);
    expect(await startTicksOf(runbook.pid), "the same process, never restarted").to.equal(runbook.startTicks);

    const records = fs.readdirSync(dir).filter((f) => f.endsWith(".json") && !earlier.has(f)).map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as { subject: { alias: string }; observations: { adopted?: { run: string } } });
    expect(records.filter((r) => r.subject.alias === "e1" && r.observations.adopted?.run === RUN)).to.have.length(1);

    // Adopted means owned: a second up changes nothing, a destroy stops it.
    const again = await stack.up({ ...quiet, expectNoChanges: true });
    expect(Object.keys(again.summary.resourceChanges ?? {}).filter((op) => op !== "same")).to.deep.equal([]);
    await stack.destroy(quiet);
    expect(await startTicksOf(runbook.pid)).to.equal(undefined);
  });

  it("replaces a runbook engine running another plan and says which field differs", async () => {
    const seqs = plan.argv[plan.argv.indexOf("--max-num-seqs") + 1]!;
    const other = String(Number(seqs) * 2);
    const runbook = await runbookStart(plan, { "--max-num-seqs": other });

    await withRunbookRun(true);
    await stack.up(quiet);
    const e1 = ((await stack.outputs()).engines!.value as Record<string, EngineOut>).e1!;
    expect(e1.runbook?.action).to.equal("replace");
    expect(e1.runbook?.differences).to.deep.equal([{ field: "argv --max-num-seqs", runbook: other, program: seqs }]);
    expect(e1.runbook?.reason).to.include(`argv --max-num-seqs is ${other} there, ${seqs} here`);
    expect(e1.pid).to.not.equal(runbook.pid);
    expect(await startTicksOf(runbook.pid), "the runbook's engine was stopped").to.equal(undefined);
  });
});
