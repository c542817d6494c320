/**
 * The policy pack (policy/) and `npm run verify` with the real CLI, on one converged stack of its own
 * (sim11, two engines; ports no other e2e file uses): the pack passes a preview and an up of the converged
 * stack; `verify` holds until an engine is restarted by hand, and again once `up --refresh` with the pack
 * has re-measured it (the pack's preview judging that evidence pending); then the stack breaks one gate
 * at a time in ways only the pack stands against, and each violation message is asserted. The state taken
 * after the up is put back before the stack is destroyed, so nothing is left running on sim11.
 */
import { execFile } from "node:child_process";
import * as path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import type { Deployment, Stack, UpOptions } from "@pulumi/pulumi/automation";
import { simDown, simUp } from "../../sim/hosts";
import type { SimHost } from "../../sim/hosts/host";
import { awaitHealthy, restartByHand, restartWaveByHand } from "./support/restart";
import { API_KEY, E2E_TIME_SCALE, EngineEntry, openStack, PROJECT_ROOT } from "./support/stack";

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

/** `npm run verify -- --stack <STACK>`: its exit code and stdout. */
async function verify(): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run("npm", ["run", "-s", "verify", "--", "--stack", STACK], { cwd: PROJECT_ROOT, maxBuffer: 16 << 20 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
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

  before(async function () {
    this.timeout(900_000);
    const [host] = (await simUp({ hosts: 12, aliases: [HOST], layouts: { [HOST]: "h100:2" }, timeScale: E2E_TIME_SCALE })).hosts as [SimHost];
    stack = await openStack(STACK, [host], ENGINES, { router: { port: 8721 }, observability: { prometheusPort: 9791 } });
    await upConverged(stack);
    converged = await stack.exportStack();
  });

  after(async function () {
    this.timeout(600_000);
    if (!stack) return;
    // The violations below removed evidence from state; the converged state names every process to stop.
    if (converged) await stack.importStack(converged);
    await stack.destroy(quiet);
    await stack.workspace.removeStack(STACK);
    await simDown({ aliases: [HOST] });
  });

  it("passes a preview and an up of the converged stack", async () => {
    const preview = await previewWithPack(stack);
    expect(preview.passed, preview.output).to.equal(true);
    expect(preview.output).to.match(/✅ narwhal-evidence@v0\.1\.0 \(local: .*\/policy\)/);
    const up = await stack.up({ policyPacks: [PACK], ...quiet });
    expect(Object.keys(up.summary.resourceChanges ?? {}).filter((op) => op !== "same")).to.deep.equal([]);
  });

  it("verify exits 0 while the evidence holds, 1 naming the engine's evidence after it restarts by hand, and 0 after an up with the pack", async () => {
    const holds = await verify();
    expect(holds.code, holds.stderr).to.equal(0);
    expect(holds.stdout).to.match(/^Stack e2e-policy: nothing invalidated; all \d+ pieces of evidence kept\.$/m);

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
    await run(path.join(PROJECT_ROOT, ".tools", "bin", "pulumi"), ["state", "delete", "--stack", STACK, cache, "--target-dependents", "--yes"], { cwd: PROJECT_ROOT });
    const r = await previewWithPack(stack, [urnOf(converged!, "fleet-p1-generation")]);
    expect(r.passed).to.equal(false);
    for (const what of ["cache capture", "attestation", "profile"]) {
      expect(r.output).to.include(`engine p1: no ${what} in the stack (fail closed: missing evidence is a violation). Fix: run \`pulumi up\` to measure the ${what} of generation sha256:`);
    }
    // Profiles are measured side by side: nothing of p2 depended on p1's cache, so all of its evidence stays.
    expect(r.output).to.not.match(/engine p2: no /);
  });
});
