/**
 * Gates B and G run as `@pulumi/command` scripts on the router host; this keeps their evidence record:
 * each script and its output as artifacts, what they established as observations, in the same store as
 * every measurement, so the deployment record has an entry for every gate.
 *
 * - create: writes the record (the steps have just finished: their command resources are its inputs).
 * - diff:   a change of any step or observation is a new run, so a new record replaces this one; a
 *           preview holds what a step printed while its command only runs again (`startKey`).
 * - read:   the record is of the past: nothing is re-run (the evidence check still applies).
 * - delete: leaves the record, as every evidence record is left.
 */
import type * as pulumi from "@pulumi/pulumi";
import { heldWhileStartStands } from "../../lib/evidence/diff";
import { evidenceProvider } from "../evidence-provider";
import { commandRecordInputs, type CommandRecordInputs, type CommandRecordOutputs } from "./check";

const MEASURED_AGAINST = ["kind", "hostAlias", "steps", "observations"] as const;

/** The log each kind's scripts keep with a failed attempt: pip's for the install, narwhal-serve's for the router. */
const STEP_LOGS: Record<CommandRecordInputs["kind"], string> = { install: "pip.log", router: "router.log" };

async function record(inputs: CommandRecordInputs): Promise<CommandRecordOutputs> {
  const { providerEvidence } = require("../../lib/evidence/provider-evidence") as typeof import("../../lib/evidence/provider-evidence");
  const { textDigest } = require("../../lib/router/serve") as typeof import("../../lib/router/serve");
  const store = providerEvidence(inputs.stack);
  const recordedAt = new Date().toISOString();
  const { parseKeptAttempts } = require("../../lib/runtime/attempts") as typeof import("../../lib/runtime/attempts");
  const { listedAttempts } = require("../failed-attempt") as typeof import("../failed-attempt");
  const artifacts = [];
  const failedAttempts = [];
  for (const s of inputs.steps) {
    artifacts.push(await store.artifact(inputs.kind, `${s.name}.sh`, s.script));
    artifacts.push(await store.artifact(inputs.kind, `${s.name}.stdout`, s.stdout));
    // The failed attempts the step's script kept on the host and listed (lib/runtime/attempts.ts).
    const listed = await listedAttempts(store, inputs.kind, s.name, STEP_LOGS[inputs.kind], parseKeptAttempts(s.stdout));
    artifacts.push(...listed.artifacts);
    failedAttempts.push(...listed.failedAttempts.map((a) => ({ step: s.name, ...a })));
  }
  const written = await store.record({
    kind: inputs.kind,
    subject: { kind: "host", alias: inputs.hostAlias },
    inputs: { steps: inputs.steps.map((s) => s.name) },
    // A command resource exits 0 or fails the update before this record exists; its own times are not
    // reported, so each step carries the time it was recorded.
    commands: inputs.steps.map((s) => ({ scriptSha256: textDigest(s.script), host: inputs.hostAlias, exitStatus: 0, startedAt: recordedAt, endedAt: recordedAt })),
    startedAt: recordedAt,
    endedAt: recordedAt,
    observations: { ...JSON.parse(JSON.stringify(inputs.observations)), failedAttempts },
    verdict: { status: "pass", reasons: [] },
    artifacts,
  });
  return { ...inputs, recordedAt, evidence: { relativePath: written.relativePath, digest: written.digest } };
}

export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<CommandRecordInputs, CommandRecordOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: ["stack"],
  inputs: commandRecordInputs,
  compared: (olds, news) => ({ olds, news: heldWhileStartStands<CommandRecordInputs>(olds, news, ["steps", "observations"], "startKey") }),
  async create(inputs) {
    const outs = await record(inputs);
    return { id: `${inputs.stack}-${inputs.kind}-${outs.evidence.digest.slice(7, 19)}`, outs };
  },
});
