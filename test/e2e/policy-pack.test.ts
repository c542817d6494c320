/**
 * The policy pack (policy/) and `npm run verify` with the real CLI, on one converged stack of its own
 * (sim11, two engines; ports no other e2e file uses), kept as a team keeps it: state and evidence in one
 * S3-compatible store (a private SeaweedFS), through the CLI's DIY S3 backend and `evidence.store`.
 *
 * The pack passes a preview and an up of the converged stack, while a second clone's up waits for nothing
 * and is refused by the state's lock; from that clone, which never ran `up`, `verify` and `export-record`
 * read every record from the store; `verify` holds until an engine is restarted by hand, and again once
 * `up --refresh` with the pack has re-measured it (the pack's preview judging that evidence pending); then
 * the stack breaks one gate at a time in ways only the pack stands against, and each violation message is
 * asserted. The state taken after the up is put back before the stack is destroyed, so nothing is left
 * running on sim11.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { LocalWorkspace, PulumiCommand, type Deployment, type Stack, type UpOptions } from "@pulumi/pulumi/automation";
import { simDown, simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts/host";
import { awaitHealthy, restartByHand, restartWaveByHand } from "./support/restart";
import { API_KEY, E2E_TIME_SCALE, EngineEntry, openStack, PROJECT_ROOT, setObjectConfig } from "./support/stack";
import { secondClone, teamStore, type TeamStore } from "./support/team";
import { startObjectStore, type ObjectStoreServer } from "../support/object-store";

const STACK = "e2e-policy";
const HOST = "sim11";
const PACK = path.join(PROJECT_ROOT, "policy");
const ENGINES: EngineEntry[] = [
  { id: "p1", host: HOST, gpuIds: [0], port: 8731, attestationPort: 8741, nixlPort: 5731 },
  { id: "p2", host: HOST, gpuIds: [1], port: 8732, attestationPort: 8742, nixlPort: 5732 },
];
const quiet = { onOutput: () => undefined };
const run = promisify(execFile);

/** A preview with the pack: whether it passed, and what the CLI printed (the policy report is in it). */
async function previewWithPack(stack: Stack, target?: string[]): Promise<{ passed: boolean; output: string }> {
  let output = "";
  try {
    await stack.preview({ policyPacks: [PACK], onOutput: (s) => (output += s), ...(target ? { target } : {}) });
    return { passed: true, output };
  } catch (e) {
    return { passed: false, output: `${output}\n${(e as Error).message}` };
  }
}

let team: TeamStore;

/** `npm run <script> -- --stack <STACK> ...` in a checkout, with the team's environment: its exit code and output. */
async function npmRun(script: string, args: string[] = [], cwd = PROJECT_ROOT): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run("npm", ["run", "-s", script, "--", "--stack", STACK, ...args], { cwd, maxBuffer: 16 << 20, env: { ...process.env, ...team.env } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/** `npm run verify -- --stack <STACK>`: its exit code and stdout. */
const verify = (cwd = PROJECT_ROOT) => npmRun("verify", [], cwd);

/** The stack as another clone's workspace sees it. */
async function stackIn(dir: string): Promise<Stack> {
  const cli = await PulumiCommand.get({ root: path.join(PROJECT_ROOT, ".tools"), skipVersionCheck: false });
  return LocalWorkspace.selectStack({ stackName: STACK, workDir: dir }, { pulumiCommand: cli, envVars: team.env });
}

/** Waits, bounded, until the DIY backend holds a lock on the stack (`.pulumi/locks/` in the bucket). */
async function lockTaken(timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await team.bucket.list(".pulumi/locks/")).length > 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no state lock appeared within ${timeoutMs} ms of the first up's start`);
}

/**
 * `up` until the stack converges. Two cores shared with other runs can push one engine's decode fit just
 * past the preflight's profile limit (a failed `profile` gate): the retry measures the profiles again.
 */
async function upConverged(stack: Stack, opts: UpOptions = {}, tries = 3): Promise<void> {
  let replace: string[] = [];
  for (let i = 1; ; i++) {
    try {
      await stack.up({ ...quiet, ...opts, ...(replace.length ? { replace } : {}) });
      return;
    } catch (e) {
      if (i >= tries || !/preflight failed: profile/.test((e as Error).message)) throw e;
      const d = await stack.exportStack();
      replace = (d.deployment.resources as Array<{ urn: string; type: string }>).filter((r) => r.type === "pulumi-nodejs:dynamic/narwhal:Profile").map((r) => r.urn);
    }
  }
}

const urnOf = (d: Deployment, name: string): string => (d.deployment.resources as Array<{ urn: string }>).find((r) => r.urn.endsWith(`::${name}`))!.urn;

describe("e2e: policy pack and verify", function () {
  this.timeout(900_000);
  let stack: Stack;
  let converged: Deployment | undefined;
  let server: ObjectStoreServer | undefined;
  let clone: { dir: string; remove(): void } | undefined;

  before(async function () {
    this.timeout(900_000);
    // Evidence a local run left would hide a record written to the folder instead of the store.
    fs.rmSync(path.join(PROJECT_ROOT, "runs", STACK), { recursive: true, force: true });
    // The store and the host each spend their start waiting, not computing: side by side.
    const [started, sim] = await Promise.all([startObjectStore(), simUp({ hosts: 12, aliases: [HOST], layouts: { [HOST]: "h100:2" }, timeScale: E2E_TIME_SCALE })]);
    server = started;
    team = await teamStore(server);
    const [host] = sim.hosts as [SimHost];
    const sections = { router: { port: 8721 }, observability: { prometheusPort: 9791 }, evidence: { store: team.evidenceStore } };
    stack = await openStack(STACK, [host], ENGINES, sections, team.env);
    await upConverged(stack);
    converged = await stack.exportStack();
    clone = secondClone(STACK);
  });

  after(async function () {
    this.timeout(600_000);
    if (!stack) return;
    // The violations below removed evidence from state; the converged state names every process to stop.
    clone?.remove();
    if (stack) {
      if (converged) await stack.importStack(converged);
      await stack.destroy(quiet);
      await stack.workspace.removeStack(STACK);
      await simDown({ aliases: [HOST] });
    }
    await server?.stop();
  });

  it("keeps every record in the team's store and none in the project's folder", async () => {
    const keys = await team.bucket.list(`evidence/${STACK}/evidence/`);
    for (const kind of ["discovery", "generation", "cache-capture", "attestation", "profile", "preflight"]) {
      expect(keys.filter((k) => k.startsWith(`evidence/${STACK}/evidence/${kind}/`)).length, kind).to.be.greaterThan(0);
    }
    expect(fs.existsSync(path.join(PROJECT_ROOT, "runs", STACK, "evidence"))).to.equal(false);
  });

  it("passes a preview and an up of the converged stack, during which another clone's up is refused by the state's lock", async () => {
    const preview = await previewWithPack(stack);
    expect(preview.passed, preview.output).to.equal(true);
    expect(preview.output).to.match(/✅ narwhal-evidence@v0\.1\.0 \(local: .*\/policy\)/);
    const first = stack.up({ policyPacks: [PACK], ...quiet });
    await lockTaken();
    const refused = await (await stackIn(clone!.dir)).up(quiet).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(refused?.message).to.match(/the stack is currently locked by 1 lock\(s\)/);
    const up = await first;
    expect(Object.keys(up.summary.resourceChanges ?? {}).filter((op) => op !== "same")).to.deep.equal([]);
  });

  it("from a clone that never ran up: export-record and verify read every record from the store, and a store that does not answer stops the run before any host is touched", async () => {
    const exported = await npmRun("export-record", ["--out", "export"], clone!.dir);
    expect(exported.code, exported.stderr).to.equal(0);
    expect(exported.stdout).to.match(/^deployment record sha256:[0-9a-f]{64} \(deployment-record\/[0-9a-f]{64}\.json in the evidence store\)$/m);
    expect(fs.existsSync(path.join(clone!.dir, "export", "deployment-record.json"))).to.equal(true);

    const holds = await verify(clone!.dir);
    expect(holds.code, holds.stderr).to.equal(0);
    expect(holds.stdout).to.match(/^Stack e2e-policy: nothing invalidated; all \d+ pieces of evidence kept\.$/m);
    expect(fs.existsSync(path.join(clone!.dir, "runs", STACK, "evidence"))).to.equal(false);

    const elsewhere = await stackIn(clone!.dir);
    const closed = team.evidenceStore.replace(/endpoint=http:\/\/127\.0\.0\.1:\d+/, "endpoint=http://127.0.0.1:9");
    await setObjectConfig(elsewhere, "evidence", { store: closed });
    let output = "";
    const stopped = await elsewhere.preview({ onOutput: (s) => (output += s) }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(stopped?.message).to.include("evidence store s3://narwhal-team/evidence/e2e-policy/evidence (http://127.0.0.1:9) did not answer a listing of the bucket");
    expect(output).not.to.match(/fleet-discovery-sim11|narwhal:HostDiscovery/);
  });

  it("verify exits 1 naming the engine's evidence after it restarts by hand, and 0 after an up with the pack", async () => {
    await awaitHealthy(await restartByHand(STACK, "p2", HOST));
    const stale = await verify();
    expect(stale.code, stale.stderr).to.equal(1);
    expect(stale.stdout).to.include("Re-measured (replaced):");
    for (const name of ["fleet-p2-generation", "fleet-p2-cache", "fleet-attestation-p2", "fleet-profiles-p2"]) expect(stale.stdout).to.include(name);

    // The runbook's rule: p2's KV peer restarts too (one wave). An up with the pack re-measures both, its
    // preview judging the evidence it is about to measure as pending, and the result passes the pack.
    await restartWaveByHand(STACK, ["p1", "p2"], Object.fromEntries(ENGINES.map((e) => [e.id, e])));
    await upConverged(stack, { refresh: true, policyPacks: [PACK] });
    const again = await verify();
    expect(again.code, again.stdout + again.stderr).to.equal(0);
    converged = await stack.exportStack();
  });

  it("rejects a secret config key stored as a plain value", async () => {
    await stack.setConfig("narwhal-fleet:engineApiKey", { value: API_KEY, secret: false });
    try {
      const r = await previewWithPack(stack);
      expect(r.passed).to.equal(false);
      // The program refuses it first, before any resource the pack could judge; the pack's own rule
      // (lib/policy, unit-tested) stands behind it for a program that would not.
      expect(r.output).to.include("engineApiKey: set in clear text, so it is stored unencrypted in the stack file; store it as a secret: `pulumi config set --secret engineApiKey <value>`");
    } finally {
      await stack.setConfig("narwhal-fleet:engineApiKey", { value: API_KEY, secret: true });
    }
  });

  it("rejects a router whose preflight failed", async () => {
    const edited = JSON.parse(JSON.stringify(converged)) as Deployment;
    for (const r of edited.deployment.resources as Array<{ urn: string; outputs: Record<string, unknown> }>) {
      if (!r.urn.endsWith("::fleet-preflight")) continue;
      r.outputs["gates"] = (r.outputs["gates"] as Array<Record<string, unknown>>).map((g) => (g["gate"] === "slo" ? { ...g, verdict: "fail" } : g));
    }
    await stack.importStack(edited);
    const r = await previewWithPack(stack);
    expect(r.passed).to.equal(false);
    expect(r.output).to.include(
      "router fleet-router-host-router-process: preflight fleet-preflight failed (slo=fail). Fix: resolve the failing gates (see the preflight's evidence record) and run `pulumi up`.",
    );
    await stack.importStack(converged!);
  });

  it("rejects a native runtime checked without its executable's digest, and a profile adopted without its store's", async () => {
    // What the program always records, taken out of the state: only the pack stands against a stack
    // whose state was edited or written by something else.
    const edited = JSON.parse(JSON.stringify(converged)) as Deployment;
    for (const r of edited.deployment.resources as Array<{ urn: string; outputs: Record<string, unknown> }>) {
      if (r.urn.endsWith("::fleet-p1-image-check")) r.outputs["identity"] = { ...(r.outputs["identity"] as Record<string, unknown>), sha256: "" };
      if (r.urn.endsWith("::fleet-profiles-p2")) r.outputs["adoption"] = { verdict: "adopted", source: { storePath: "/srv/runbook/profiles.json" } };
    }
    await stack.importStack(edited);
    try {
      const r = await previewWithPack(stack);
      expect(r.passed).to.equal(false);
      expect(r.output).to.include(
        "engine p1: image check fleet-p1-image-check records no SHA-256 of the native vLLM executable it checked. Fix: make the executable readable on the host and run `pulumi up --refresh`.",
      );
      expect(r.output).to.include(
        "engine p2: profile fleet-profiles-p2 adopted a profile store (/srv/runbook/profiles.json) without its SHA-256. Fix: set narwhal-fleet:profiling.adopt.sha256 to the store's `sha256:<hex>` and run `pulumi up`.",
      );
    } finally {
      await stack.importStack(converged!);
    }
  });

  it("rejects a targeted update that leaves an engine without the evidence removed from state", async () => {
    const cache = urnOf(converged!, "fleet-p1-cache");
    await run(path.join(PROJECT_ROOT, ".tools", "bin", "pulumi"), ["state", "delete", "--stack", STACK, cache, "--target-dependents", "--yes"], { cwd: PROJECT_ROOT, env: { ...process.env, ...team.env } });
    const r = await previewWithPack(stack, [urnOf(converged!, "fleet-p1-generation")]);
    expect(r.passed).to.equal(false);
    for (const what of ["cache capture", "attestation", "profile"]) {
      expect(r.output).to.include(`engine p1: no ${what} in the stack (fail closed: missing evidence is a violation). Fix: run \`pulumi up\` to measure the ${what} of generation sha256:`);
    }
    // Profiles are measured side by side: nothing of p2 depended on p1's cache, so all of its evidence stays.
    expect(r.output).to.not.match(/engine p2: no /);
  });
});
