import { expect } from "chai";
import type { Stack } from "@pulumi/pulumi/automation";
import { runInHost } from "../../../sim/hosts";
import { parseNarwhalReport } from "../../../lib/preflight/narwhal-report";
import { ENGINE_API_KEY_ENV } from "../../../lib/fleet/fleet-document";
import { API_KEY } from "./stack";

/**
 * The pinned `narwhal-check` from the stack's own narwhal install, on the router host, in the router's
 * folder (its fleet.json and profile store) with the engine key in its environment: the verdict per
 * gate must be the one the stack's Preflight resource recorded. `gates` is a failed run's record when
 * `up` stopped at the preflight; `simHost` names the simulated host when the stack's alias differs.
 */
export async function expectNarwhalCheckAgrees(stack: Stack, opts: { stateDir?: string; gates?: Record<string, string>; simHost?: string } = {}): Promise<void> {
  const outputs = await stack.outputs();
  const router = opts.simHost ?? (outputs.deployment.value as { router: string }).router;
  const binDir = (outputs.narwhalInstall.value as { binDir: string }).binDir;
  const ours = opts.gates ?? Object.fromEntries(Object.entries(outputs.preflight.value.gates as Record<string, { verdict: string }>).map(([g, v]) => [g, v.verdict]));
  const run = `${opts.stateDir ?? "/var/lib/narwhal-fleet"}/${stack.name}/router`;
  const check = await runInHost(router, ["sh", "-c", `cd '${run}' && '${binDir}/narwhal-check' --fleet fleet.json --format json`], {
    allowFail: true,
    timeoutMs: 300_000,
    env: { [ENGINE_API_KEY_ENV]: API_KEY },
  });
  const theirs = parseNarwhalReport(check.stderr).verdicts;
  expect(ours, `our preflight vs narwhal-check (exit ${check.code}):\n${check.stderr}`).to.deep.equal(theirs);
}
