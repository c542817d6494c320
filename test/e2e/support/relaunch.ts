/**
 * Rows whose change relaunches one engine of the shared fleet, which keeps the default
 * `runtime.restartKvPeers: false`: the `up` measures that engine again and then stops at the preflight,
 * because its peers still hold the old process's NIXL handshake (vLLM #38840). The runbook's rule (restart
 * every engine in one wave, then measure again) brings the fleet back.
 */
import { expect } from "chai";
import type { Stack } from "@pulumi/pulumi/automation";
import { plannedChanges, type PlannedStep } from "./preview";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./remeasured";
import { restartWaveByHand } from "./restart";

const ROUTER_RECORD = "fleet-router-host-router-record";

/**
 * Runs `up --refresh` after a change that relaunches `engine`, expects the preflight to fail exactly that
 * engine's pairs (the router stays stopped, so its record is not written) and returns what was re-measured.
 * `exact`: the records are exactly the planned replacements; otherwise (a host discovered again, whose
 * facts the preview could not know) each was written by a resource the preview planned to change.
 */
export async function expectUpStopsAtStalePeers(stack: Stack, steps: ReadonlyMap<string, PlannedStep>, engine: string, opts: { exact: boolean }): Promise<string[]> {
  const peers = ["e1", "e2", "e3", "e4"].filter((id) => id !== engine);
  const snapshot = await snapshotEvidence(stack);
  let failure = "";
  await stack.up({ refresh: true, onOutput: () => undefined }).catch((err: Error) => (failure = err.message));
  expect(failure).to.contain(`preflight failed: consume (${peers.map((p) => `${engine} -> ${p}`).join(", ")}); the router stays stopped`);
  const remeasured = await remeasuredSince(snapshot);
  const planned = plannedRemeasure(steps, snapshot).filter((n) => n !== ROUTER_RECORD);
  if (opts.exact) expect(remeasured).to.deep.equal(planned);
  else expect([...steps.keys()]).to.include.members(remeasured);
  expect(remeasured, "the relaunched engine's evidence and the failed preflight (kept)").to.include.members([`fleet-${engine}-generation`, `fleet-profiles-${engine}`, "fleet-preflight"]);
  for (const name of remeasured) expect(name, "no record of another engine").to.not.match(new RegExp(`^fleet-(attestation-|profiles-)?(${peers.join("|")})\\b`));
  return remeasured;
}

/** The runbook's rule: every engine restarts in one wave; `up` measures each again as planned and converges. */
export async function restartFleetAndConverge(stack: Stack): Promise<void> {
  await restartWaveByHand(stack.name, ["e1", "e2", "e3", "e4"], (await stack.outputs()).engines!.value as Record<string, { host: string; url: string }>);
  const wave = await plannedChanges(stack, { refresh: true });
  const snapshot = await snapshotEvidence(stack);
  await stack.up({ refresh: true, onOutput: () => undefined });
  expect(await remeasuredSince(snapshot)).to.deep.equal(plannedRemeasure(wave, snapshot));
  expect([...(await plannedChanges(stack, { refresh: true })).keys()]).to.deep.equal([]);
}
