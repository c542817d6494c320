/**
 * Rows whose change relaunches one engine of the shared fleet, which turns the peer wave off
 * (`runtime.restartKvPeers: false`). The `up` after the change measures that engine again and stops at the
 * preflight, because its peers still hold the old process's NIXL handshake (vLLM #38840). Back to where it
 * was, the runbook's rule is followed before the `up`: the peers restart first, so the `up` that relaunches
 * the engine measures every engine again and converges.
 */
import { expect } from "chai";
import type { Stack } from "@pulumi/pulumi/automation";
import { expectNothingPlanned, plannedChanges, type PlannedStep } from "./preview";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./remeasured";
import { restartWaveByHand } from "./restart";
import { SHARED_ENGINES as ENGINES } from "./names";
const ROUTER_RECORD = "fleet-router-host-router-record";

/**
 * Holds what `up` re-measured to the preview: exactly its replacements when `exact`, else (a host discovered
 * again, whose facts the preview could not know) only resources it planned to change.
 */
function expectWithinPlan(remeasured: string[], steps: ReadonlyMap<string, PlannedStep>, planned: string[], exact: boolean): void {
  if (exact) expect(remeasured).to.deep.equal(planned);
  else expect([...steps.keys()], "resources the preview planned to change").to.include.members(remeasured);
}

/**
 * Runs `up --refresh` after a change that relaunches `engine`, expects the preflight to fail exactly that
 * engine's pairs (the router is not swapped onto it, so its record is not written), and holds what was re-measured.
 */
export async function expectUpStopsAtStalePeers(stack: Stack, steps: ReadonlyMap<string, PlannedStep>, engine: string, opts: { exact: boolean }): Promise<void> {
  const peers = ENGINES.filter((id) => id !== engine);
  const snapshot = await snapshotEvidence(stack);
  let failure = "";
  await stack.up({ refresh: true, onOutput: () => undefined }).catch((err: Error) => (failure = err.message));
  expect(failure, failure.slice(-3000)).to.contain(`preflight failed: consume (${peers.map((p) => `${engine} -> ${p}`).join(", ")}); the router is not started on it`);
  const remeasured = await remeasuredSince(snapshot);
  expectWithinPlan(remeasured, steps, plannedRemeasure(steps, snapshot).filter((n) => n !== ROUTER_RECORD), opts.exact);
  expect(remeasured, "the relaunched engine's evidence and the failed preflight (kept)").to.include.members([`fleet-${engine}-generation`, `fleet-profiles-${engine}`, "fleet-preflight"]);
  for (const name of remeasured) expect(name, "no record of another engine").to.not.match(new RegExp(`^fleet-(attestation-|profiles-)?(${peers.join("|")})\\b`));
}

/**
 * The runbook's rule ahead of a change that relaunches `engine`: its peers restart by hand in one wave, then
 * `up --refresh` relaunches it, measures every engine again as the preview said, and nothing is left to do.
 */
export async function restartPeersThenUp(stack: Stack, engine: string, opts: { exact: boolean }): Promise<void> {
  await restartWaveByHand(stack.name, ENGINES.filter((id) => id !== engine), (await stack.outputs()).engines.value as Record<string, { host: string }>);
  const steps = await plannedChanges(stack, { refresh: true });
  for (const id of ENGINES) expect(steps.get(`fleet-${id}-generation`)?.op, id).to.equal("replace");
  const snapshot = await snapshotEvidence(stack);
  await stack.up({ refresh: true, onOutput: () => undefined });
  const remeasured = await remeasuredSince(snapshot);
  expectWithinPlan(remeasured, steps, plannedRemeasure(steps, snapshot), opts.exact);
  for (const id of ENGINES) expect(remeasured, "every engine measured again").to.include(`fleet-profiles-${id}`);
  await expectNothingPlanned(stack, { refresh: true });
}
