import { expect } from "chai";
import type { Stack } from "@pulumi/pulumi/automation";
import { runInHost } from "../../../sim/hosts";
import { parseNarwhalReport } from "../../../lib/preflight/narwhal-report";

/**
 * The pinned `narwhal-check` from the stack's own narwhal install, on the router host, in the router's
 * folder and environment (its fleet.json, profile store and key file): the verdict per gate must be the
 * one the stack's Preflight resource recorded. `preflight` is the stack's output, or the gates of a
 * failed run's record when `up` stopped at the preflight.
 */
export async function expectNarwhalCheckAgrees(stack: Stack, opts: { stateDir?: string; gates?: Record<string, string> } = {}): Promise<void> {
  const outputs = await stack.outputs();
  const router = (outputs.deployment!.value as { router: string }).router;
  const binDir = (outputs.narwhalInstall!.value as { binDir: string }).binDir;
  const ours = opts.gates ?? Object.fromEntries(Object.entries(outputs.preflight!.value.gates as Record<string, { verdict: string }>).map(([g, v]) => [g, v.verdict]));
  const run = `${opts.stateDir ?? "/var/lib/narwhal-fleet"}/${stack.name}/router`;
  const check = await runInHost(router, ["sh", "-c", `cd '${run}' && set -a && . ./router.env && set +a && '${binDir}/narwhal-check' --fleet fleet.json --format json`], { allowFail: true, timeoutMs: 300_000 });
  const theirs = parseNarwhalReport(check.stderr).verdicts;
  expect(ours, `our preflight vs narwhal-check (exit ${check.code}):\n${check.stderr}`).to.deep.equal(theirs);
}
