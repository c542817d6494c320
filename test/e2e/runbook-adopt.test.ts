/**
 * e2e: an engine the runbook's launcher started (its launch directory with launch.json, checked.json,
 * the private engine.env and native-process.json; the process a session leader on the host) is adopted
 * by the first `up` of a stack naming that directory when it serves the program's plan: same pid, same
 * start, generation evidence recording the adoption. An engine started with another plan is replaced,
 * and the stack output names the differing field. And the runbook through Gate F (engines, their own
 * narwhal-attest sidecars, a store the pinned narwhal-profile bound to those attestations) comes under
 * the program with nothing profiled again until an engine restarts. Runs on an AMD host of its own
 * (sim15), beside the shared fleet's files.
 */
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { request } from "undici";
import type { Stack } from "@pulumi/pulumi/automation";
import { runInHost, simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts";
import type { LaunchPlan } from "../../lib/launch/plan";
import { runbookEnv, runbookPlan } from "../unit/launch/runbook-record";
import { shellLine, shq } from "../../lib/shell";
import { launchArgs } from "../../lib/attestation/document";
import { sidecarEndpoint } from "../../lib/attestation/sidecar";
import type { EngineContract } from "../../lib/attestation/contract";
import { runbookAttestationDocument } from "../unit/attestation/runbook-document-fixture";
import { API_KEY, E2E_TIME_SCALE, EngineEntry, hostEntries, openStack, PROFILING, PROJECT_ROOT, getObjectConfig, setObjectConfig } from "./support/stack";
import { expectNarwhalCheckAgrees } from "./support/narwhal-check";
import { awaitHealthy, restartByHand } from "./support/restart";
import { readSimConfig, writeSimConfig } from "../../sim/hosts/sim-config";

const STACK = "e2e-runbook";
const HOST = "sim15";
const RUN = "/srv/runbook/runs/engine-launch-e2e";
/** Simulated seconds before a UCX endpoint to a gone peer fails, on this host in the case that waits it out. */
const ENDPOINT_TIMEOUT_S = 20;
/** Each engine's runbook launch directory in the store-adoption case. */
const runOf = (id: string) => `/srv/runbook/runs/engine-launch-${id}`;
const quiet = { onOutput: () => undefined };

interface ProfileOut {
  bindingDigest: string;
  evidence?: { relativePath: string };
  adoption?: { verdict: string; reason: string };
}

interface EvidenceRecord {
  startedAt: string;
  observations: { adopted?: { storeWrittenAt: string } };
}

const evidenceRecord = (relativePath: string) => JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, "runs", STACK, "evidence", relativePath), "utf8")) as EvidenceRecord;

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
  /** The engine contract the program attests on this host, and its fleet document: what the runbook's sidecars and finalize-fleet give too. */
  let contract: EngineContract;
  let fleetDocument: unknown;

  async function inHost(script: string, input?: string): Promise<string> {
    const r = await runInHost(host.alias, ["sh", "-c", script], { input });
    expect(r.code, r.stderr).to.equal(0);
    return r.stdout.trim();
  }

  /** The plan the program runs for an engine, read from its own run folder after an up. */
  async function programPlan(id = "e1"): Promise<LaunchPlan> {
    return JSON.parse(await inHost(`cat /var/lib/narwhal-fleet/${STACK}/engines/${id}/launch.json`)) as LaunchPlan;
  }

  /** `launch_engine prepare` + `check` + `start --run` of a native launch, with the launcher's records. */
  async function runbookStart(plan: LaunchPlan, flags: Record<string, string> = {}, runDir = RUN): Promise<{ pid: number; startTicks: string }> {
    const attestationPort = engines.find((e) => e.id === plan.engineId)!.attestationPort;
    const launchText = JSON.stringify(runbookPlan(plan, { backend: "native", flags, attestationPort }), null, 2) + "\n";
    const sha = createHash("sha256").update(launchText).digest("hex");
    const env = runbookEnv(plan, API_KEY);
    // The process runs the changed flags too, so the engine really serves the launch.json it records.
    const argv = [...plan.argv];
    for (const [flag, value] of Object.entries(flags)) argv[argv.indexOf(flag) + 1] = value;
    const out = await inHost(
      `set -eu
umask 077
run=${shq(runDir)}
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
    return { pid: Number(pid), startTicks: startTicks };
  }

  /** A resource's outputs as the stack's state holds them (the replacement, when one is pending). */
  async function stateOutputs(name: string): Promise<Record<string, unknown>> {
    const resources = (await stack.exportStack()).deployment.resources as Array<{ urn: string; outputs?: Record<string, unknown>; delete?: boolean }>;
    const found = resources.filter((r) => r.urn.endsWith(`::${name}`) && !r.delete);
    expect(found.map((r) => r.urn), name).to.have.length(1);
    return found[0].outputs ?? {};
  }

  async function startTicksOf(pid: number): Promise<string | undefined> {
    const r = await runInHost(host.alias, ["sh", "-c", `stat=$(cat /proc/${pid}/stat) || exit 0; set -- \${stat##*) }; case $1 in Z|X) ;; *) echo "\${20}" ;; esac`], { allowFail: true });
    return r.stdout.trim() || undefined;
  }

  /** The host's key in the stack config, as `npm run import` writes it from NARWHAL_SSH_KNOWN_HOSTS. */
  async function pinHostKey(on: boolean): Promise<void> {
    const hosts = await getObjectConfig<Array<Record<string, unknown>>>(stack, "hosts");
    await setObjectConfig(stack, "hosts", hosts.map(({ hostKey: _, ...h }) => (on ? { ...h, hostKey: host.hostKey } : h)));
  }

  async function withRunbookRun(on: boolean): Promise<void> {
    await setObjectConfig(stack, "engines", engines.map((e) => (e.id === "e1" && on ? { ...e, runbookRun: RUN } : e)));
  }

  before(async () => {
    host = (await simUp({ hosts: 15, aliases: [HOST], layouts: { [HOST]: "mi300x:2" }, timeScale: E2E_TIME_SCALE })).hosts.find((h) => h.alias === HOST)!;
    engines = [
      { id: "e1", host: host.alias, gpuIds: [0], port: 8601, attestationPort: 8611, nixlPort: 5991 },
      { id: "e2", host: host.alias, gpuIds: [1], port: 8602, attestationPort: 8612, nixlPort: 5992 },
    ];
    stack = await openStack(STACK, [host], engines, {
      // The cases start the runbook's engines from the plans a destroyed stack left in its folder.
      hosts: hostEntries([host], { retainOnDestroy: true }),
      model: { servedName: "tiny-llama", checkpointDir: host.modelDir },
    });
    await stack.destroy(quiet);
    // The program's first up tells the test which plan it derives for e1 on this host.
    await stack.up(quiet);
    plan = await programPlan();
    contract = (JSON.parse(await inHost(`cat /var/lib/narwhal-fleet/${STACK}/attestation/e1/engine-attestation.json`)) as { contract: EngineContract }).contract;
    fleetDocument = ((await stack.outputs()).attestation.value as { fleetDocument: unknown }).fleetDocument;
  });

  after(async () => {
    if (!stack) return;
    await stack.destroy(quiet);
    await runInHost(host.alias, ["sh", "-c", `for f in /srv/runbook/runs/*/native-process.json /srv/runbook/runs/*/sidecar.pid; do [ -f "$f" ] && kill -KILL "-$(sed -n 's/^[^0-9]*\\([0-9][0-9]*\\).*/\\1/p' "$f" | head -n 1)" 2>/dev/null; done; rm -rf /srv/runbook`], { allowFail: true });
  });

  it("adopts the runbook's engine serving the program's plan without restarting it, and records the adoption", async () => {
    await stack.destroy(quiet);
    const runbook = await runbookStart(plan);

    const dir = path.join(PROJECT_ROOT, "runs", STACK, "evidence", "generation");
    const earlier = new Set(fs.existsSync(dir) ? fs.readdirSync(dir) : []);
    await withRunbookRun(true);
    await stack.up(quiet);
    await expectNarwhalCheckAgrees(stack);
    const e1 = ((await stack.outputs()).engines.value as Record<string, EngineOut>).e1;
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

  it("replaces a runbook engine running another plan and says which field differs, in the preview and in the up", async () => {
    await stack.destroy(quiet);
    const seqs = plan.argv[plan.argv.indexOf("--max-num-seqs") + 1];
    const other = String(Number(seqs) * 2);
    const runbook = await runbookStart(plan, { "--max-num-seqs": other });
    // Each logged line shows twice in a preview's output (under its resource and in the diagnostics).
    const forecastLines = (stdout: string) => [...new Set(stdout.split("\n").filter((l) => l.includes("adoption forecast:")).map((l) => l.slice(l.indexOf("adoption forecast:"))))];

    await withRunbookRun(true);
    await pinHostKey(true);
    try {
      // A runbookRun alone (no store, no calibration) is enough for the preview to say what the up replaces.
      const before = forecastLines((await stack.preview(quiet)).stdout);
      expect(before.join("\n")).to.include(`adoption forecast: engine e1: replace: runbook launch ${RUN} (pid ${runbook.pid}) runs another plan than engine e1's: argv --max-num-seqs is ${other} there, ${seqs} here; replacing it`);
      expect(before, "only the runbook engine is forecast").to.have.length(1);

      await stack.up(quiet);
      const e1 = ((await stack.outputs()).engines.value as Record<string, EngineOut>).e1;
      expect(e1.runbook?.action).to.equal("replace");
      expect(e1.runbook?.differences).to.deep.equal([{ field: "argv --max-num-seqs", runbook: other, program: seqs }]);
      expect(e1.runbook?.reason).to.include(`argv --max-num-seqs is ${other} there, ${seqs} here`);
      expect(e1.pid).to.not.equal(runbook.pid);
      expect(await startTicksOf(runbook.pid), "the runbook's engine was stopped").to.equal(undefined);

      // The stack now records e1: later previews leave its host alone, though runbookRun stays in the config.
      expect(forecastLines((await stack.preview(quiet)).stdout)).to.deep.equal([]);
    } finally {
      await pinHostKey(false);
    }
  });

  it("adopts the profile store narwhal-profile measured on the runbook's attested engines; after one restart only that engine is profiled again", async () => {
    await stack.destroy(quiet);
    // This case waits out a UCX endpoint timeout: the engines it starts time out sooner than UCX's 3 minutes.
    writeSimConfig(host.simConfigPath, { ...readSimConfig(host.simConfigPath), nixl: { endpointTimeoutS: ENDPOINT_TIMEOUT_S } });
    const ids = engines.map((e) => e.id);
    const plans = Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await programPlan(id)] as const)));

    // The runbook through Gate F: its own narwhal-inference (Gate B as the runbook does it, from the host's
    // wheelhouse: simulated hosts have no narwhal-attest until something installs it), its engines, each with
    // its own sidecar serving the launch directory's document, ...
    const installed = await runInHost(
      host.alias,
      ["sh", "-c", "set -eu; rm -rf /srv/runbook/.venv; python3 -m venv /srv/runbook/.venv; /srv/runbook/.venv/bin/pip install --quiet --disable-pip-version-check --no-input --no-index --find-links /srv/narwhal-wheels narwhal-inference==0.7.0"],
      { timeoutMs: 300_000 },
    );
    expect(installed.code, installed.stderr).to.equal(0);
    const runbook: Record<string, { pid: number; sidecarPid: number; digest: string }> = {};
    for (const e of engines) {
      const plan = plans[e.id];
      const { pid } = await runbookStart(plan, {}, runOf(e.id));
      const endpoint = sidecarEndpoint(plan.url, e.attestationPort);
      const document = JSON.stringify(runbookAttestationDocument(contract, runOf(e.id), launchArgs(plan.argv.slice(3))), null, 2) + "\n";
      const sidecarPid = Number(
        await inHost(
          `set -eu
run=${shq(runOf(e.id))}
umask 077
cat > "$run/engine-attestation.json"
(cd "$run" && exec setsid /srv/runbook/.venv/bin/narwhal-attest --document "$run/engine-attestation.json" --engine-base ${shq(plan.url)} --host ${shq(endpoint.bindHost)} --port ${endpoint.port} --backend vllm > "$run/sidecar.log" 2>&1 < /dev/null) &
echo $! > "$run/sidecar.pid"
echo $!`,
          document,
        ),
      );
      await awaitHealthy(endpoint.healthUrl.replace(/\/health$/, ""), 60_000);
      runbook[e.id] = { pid, sidecarPid, digest: (await (await request(endpoint.url)).body.json() as { attestation_digest: string }).attestation_digest };
    }
    // ... then narwhal-profile over the fleet document, binding every row to its engine's attestation. The
    // document's engine_contract is the one these sidecars attest, complete (the NIXL versions the image
    // check read): narwhal's finalize-fleet writes the same (test/providers/preflight-contract.test.ts).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "narwhal-runbook-store-"));
    try {
      const fleet = { ...(fleetDocument as Record<string, unknown>), profiles: { path: path.join(dir, "profiles.json") } };
      expect((fleet as { engine_contract?: unknown }).engine_contract).to.deep.equal(contract);
      fs.writeFileSync(path.join(dir, "fleet.json"), JSON.stringify(fleet, null, 2), { mode: 0o600 });
      const env = { ...process.env, NARWHAL_ENGINE_API_KEY: API_KEY };
      // The stack's own sweep, so the adopted rows cover what a fresh profile would.
      const profiled = spawnSync(
        path.join(PROJECT_ROOT, ".tools", "venv", "bin", "narwhal-profile"),
        ["--fleet", path.join(dir, "fleet.json"), "--prefill-lens", PROFILING.prefillLens.join(","), "--decode-input-lens", PROFILING.decodeInputLens.join(","), "--decode-concurrency", PROFILING.decodeConcurrency.join(","), "--prefill-repeats", String(PROFILING.prefillRepeats)],
        { cwd: dir, env, encoding: "utf8", timeout: 600_000 },
      );
      expect(profiled.status, profiled.stderr).to.equal(0);
      const store = JSON.parse(fs.readFileSync(path.join(dir, "profiles.json"), "utf8")) as { profiles: Array<{ iid: string; generation_digest: string }> };
      const storeWritten = fs.statSync(path.join(dir, "profiles.json")).mtimeMs;

      // The operator's first up: engines, sidecars and the store are taken over, nothing is profiled.
      await setObjectConfig(stack, "engines", engines.map((e) => ({ ...e, runbookRun: runOf(e.id) })));
      await setObjectConfig(stack, "profiling", { ...PROFILING, adoptStore: path.join(dir, "profiles.json") });
      // Its preview, with the host key pinned as the import pins it, says beforehand what that up keeps.
      await pinHostKey(true);
      const forecast = (await stack.preview(quiet)).stdout;
      const lines = forecast.split("\n").filter((l) => l.includes("adoption forecast:")).join("\n");
      for (const id of ids) {
        expect(forecast, lines).to.include(`adoption forecast: engine ${id}: adopt: runbook launch ${runOf(id)} (pid ${runbook[id].pid}) serves engine ${id}'s plan`);
        const row = store.profiles.find((r) => r.iid === id)!.generation_digest;
        expect(forecast, lines).to.include(`adoption forecast: profile ${id}: adopt: its row in ${path.join(dir, "profiles.json")} binds ${row}, as the runbook's sidecar attests now`);
      }
      const upStarted = Date.now();
      await stack.up(quiet);
      const first = (await stack.outputs()) as Record<string, { value: unknown }>;
      const engineOut = first.engines.value as Record<string, EngineOut>;
      const attested = (first.attestation.value as { engines: Record<string, { attestationDigest: string }> }).engines;
      const profiles = (first.profiles.value as { engines: Record<string, ProfileOut> }).engines;
      for (const id of ids) {
        expect(engineOut[id].runbook?.action, engineOut[id].runbook?.reason).to.equal("adopt");
        expect(engineOut[id].pid).to.equal(runbook[id].pid);
        expect(await startTicksOf(runbook[id].sidecarPid), "the runbook's sidecar was stopped").to.equal(undefined);
        expect(attested[id].attestationDigest, "the program's sidecar answers the runbook's attestation").to.equal(runbook[id].digest);
        expect(profiles[id].adoption?.verdict, profiles[id].adoption?.reason).to.equal("adopted");
        expect(profiles[id].bindingDigest).to.equal(store.profiles.find((r) => r.iid === id)!.generation_digest);
        const record = evidenceRecord(profiles[id].evidence!.relativePath);
        expect(Date.parse(record.startedAt)).to.be.at.least(upStarted);
        expect(Date.parse(record.observations.adopted!.storeWrittenAt), "measured before this stack existed").to.be.at.most(storeWritten + 1000).and.below(upStarted);
      }
      await expectNarwhalCheckAgrees(stack);

      // One engine restarts: its sidecar now serves the program's own document, and only its profile is measured.
      const restartedAt = Date.now();
      await awaitHealthy(await restartByHand(STACK, "e2", host.alias), 60_000);
      // Its peer e1 handshakes with e2's new engine id but keeps the old process's NIXL state; once e1's UCX
      // endpoint to it has timed out (waited out here if the up would come sooner), e1's first handshake with
      // the new e2 segfaults it (vLLM #49238, NIXL 0.7.1). The preflight's e1 -> e2 passes (e2 holds nothing
      // old), its e2 -> e1 takes e1 down: the preflight stops the up, as the runbook's rule foresees.
      const endpointFailsAt = restartedAt + ENDPOINT_TIMEOUT_S * E2E_TIME_SCALE * 1000 + 5000;
      if (Date.now() < endpointFailsAt) await new Promise((r) => setTimeout(r, endpointFailsAt - Date.now()));
      let failure = "";
      await stack.up({ ...quiet, refresh: true }).catch((err: Error) => (failure = err.message));
      expect(failure, failure.slice(-2000)).to.contain("preflight failed: consume (e2 -> e1)");
      // A failed up leaves the stack outputs as they were: what it did is in the resources' state.
      const e1Profile = await stateOutputs("fleet-profiles-e1");
      expect(e1Profile.evidence, "e1's adopted profile is kept as it was").to.deep.equal(profiles.e1.evidence);
      expect(e1Profile.adoption).to.deep.equal(profiles.e1.adoption);
      const e2Profile = await stateOutputs("fleet-profiles-e2");
      const adoption = e2Profile.adoption as ProfileOut["adoption"];
      expect(adoption?.verdict).to.equal("measured");
      expect(adoption?.reason).to.include("restarted or relaunched since it was measured");
      const measured = evidenceRecord((e2Profile.evidence as { relativePath: string }).relativePath);
      expect(measured.observations.adopted).to.equal(undefined);
      expect(Date.parse(measured.startedAt)).to.be.above(restartedAt);
      expect((await stateOutputs("fleet-attestation-e1")).attestationDigest).to.equal(runbook.e1.digest);
      const e2Attestation = await stateOutputs("fleet-attestation-e2");
      expect(e2Attestation.attestationDigest).to.not.equal(runbook.e2.digest);
      expect(e2Attestation.runbookDocument, "after its restart e2's sidecar serves the program's own document").to.equal(undefined);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await pinHostKey(false);
      await withRunbookRun(false);
      await setObjectConfig(stack, "profiling", PROFILING);
    }
  });
});
