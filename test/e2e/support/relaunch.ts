/**
 * Rows whose change relaunches one engine of the shared fleet, which turns the peer wave off
 * (`runtime.restartKvPeers: false`). The `up` after the change relaunches that engine, measures it again
 * and runs the preflight within the peers' UCX endpoint timeout of the old process's exit: they handshake
 * with the new engine id (vLLM 0.29.0 keys peers by engine_id) and the `up` converges, the peers keeping the
 * old process's NIXL state (past that timeout their next new handshake would segfault them, vLLM #49238).
 * Back to where it was, the runbook's rule is followed before the `up`: the peers restart first, so the
 * `up` that relaunches the engine measures every engine again and converges.
 */
import { expect } from "chai";
import type { Stack } from "@pulumi/pulumi/automation";
import { expectNothingPlanned, plannedChanges, type PlannedStep } from "./preview";
import { plannedRemeasure, remeasuredSince, snapshotEvidence } from "./remeasured";
import * as fs from "node:fs";
import * as path from "node:path";
import { restartWaveByHand } from "./restart";
import { SHARED_ENGINES as ENGINES } from "./names";
import { E2E_TIME_SCALE, PROJECT_ROOT } from "./stack";
import { EvidenceStore, evidenceRoot } from "../../../lib/evidence/store";
import { UCX_ENDPOINT_TIMEOUT_S } from "../../../sim/engine/nixl-runtime";

const ROUTER_RECORD = "fleet-router-host-router-record";

/** When a peer's UCX endpoint to a gone process fails, in wall milliseconds at the e2e time scale. */
export const ENDPOINT_TIMEOUT_MS = UCX_ENDPOINT_TIMEOUT_S * E2E_TIME_SCALE * 1000;

/**
 * Holds what `up` re-measured to the preview: exactly its replacements when `exact`, else (a host discovered
 * again, whose facts the preview could not know) only resources it planned to change.
 */
function expectWithinPlan(remeasured: string[], steps: ReadonlyMap<string, PlannedStep>, planned: string[], exact: boolean): void {
  if (exact) expect(remeasured).to.deep.equal(planned);
  else expect([...steps.keys()], "resources the preview planned to change").to.include.members(remeasured);
}

/**
 * Milliseconds from `engine`'s newest process start to the start of the newest preflight, from the records
 * an `up` begun at `since` wrote: how long the peers had held the old process's state when the preflight's
 * transfers met the new one (the old process exited just before the new one started).
 */
export async function preflightAfterStart(stack: string, since: number, engine: string): Promise<number> {
  const store = new EvidenceStore(evidenceRoot(PROJECT_ROOT, stack));
  const newest = async (kind: string, alias: string) => {
    const records = (await store.list(kind)).map(
      (r) => JSON.parse(fs.readFileSync(path.join(store.root, r.relativePath), "utf8")) as { subject: { alias: string }; startedAt: string; observations: { processStartTime?: number } },
    );
    const mine = records.filter((r) => r.subject.alias === alias && Date.parse(r.startedAt) >= since).sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
    expect(mine, `a ${kind} record of ${alias} written since the up began`).to.not.be.empty;
    return mine[mine.length - 1];
  };
  const generation = await newest("generation", engine);
  const preflight = await newest("preflight", stack);
  return Date.parse(preflight.startedAt) - generation.observations.processStartTime! * 1000;
}

/**
 * Runs `up --refresh` after a change that relaunches `engine`, expects it to converge (the peers handshake
 * with the new process; the router restarts on the new store), and holds what was re-measured. The peers
 * are safe only because the preflight met the new process before their endpoints to the old one failed:
 * that is checked, so a slower run fails naming the cause rather than the crash it would meet.
 */
export async function expectUpConvergesBeforePeersFail(stack: Stack, steps: ReadonlyMap<string, PlannedStep>, engine: string, opts: { exact: boolean }): Promise<void> {
  const peers = ENGINES.filter((id) => id !== engine);
  const snapshot = await snapshotEvidence(stack);
  let failure = "";
  await stack.up({ refresh: true, onOutput: () => undefined }).catch((err: Error) => (failure = err.message));
  const after = await preflightAfterStart(stack.name, snapshot.takenAt, engine);
  expect(after, `the preflight began ${after} ms after ${engine}'s new process started, past the peers' ${ENDPOINT_TIMEOUT_MS} ms UCX endpoint timeout (their handshakes with it segfault them, vLLM #49238)`).to.be.below(ENDPOINT_TIMEOUT_MS);
  expect(failure, failure.slice(-3000)).to.equal("");
  const remeasured = await remeasuredSince(snapshot);
  expectWithinPlan(remeasured, steps, plannedRemeasure(steps, snapshot), opts.exact);
  expect(remeasured, "the relaunched engine's evidence, the preflight and the router's record").to.include.members([`fleet-${engine}-generation`, `fleet-profiles-${engine}`, "fleet-preflight", ROUTER_RECORD]);
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
