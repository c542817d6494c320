import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { decideRunbookAdoption, runbookAttestationOf, surveyEnvKeys, type RunbookDecision } from "../../lib/launch/runbook";
import type { LaunchPlan } from "../../lib/launch/plan";
import { parseSurvey, surveyScript } from "../../lib/runtime/runbook-survey";
import type { RunbookAttestationSource } from "../../lib/attestation/runbook-document";
import type { ProcessArgs, RunbookOutcome } from "./types";

/** Bound on the survey's one `docker inspect` (a runbook container launch). */
const SURVEY_INSPECT_TIMEOUT_S = 30;

export interface RunbookSurveyed {
  decision: pulumi.Output<RunbookDecision>;
  attestation: pulumi.Output<RunbookAttestationSource | undefined>;
}

/**
 * Reads the runbook launch directory once, when the engine is first created (its stdout holds the
 * launcher's records and the plan's non-secret environment values, never the API key), and decides
 * against the plan, and for containers the image, whether the launcher's engine is kept or replaced.
 */
export function runbookSurvey(
  name: string,
  args: ProcessArgs,
  run: string,
  parent: pulumi.Resource,
  container?: { image: string; dockerCommand?: string },
): RunbookSurveyed {
  const survey = new command.remote.Command(
    `${name}-runbook-survey`,
    {
      connection: args.connection,
      create: args.plan.apply((p) => surveyScript({ run, envKeys: surveyEnvKeys(p), dockerCommand: container?.dockerCommand, inspectTimeoutS: SURVEY_INSPECT_TIMEOUT_S })),
      triggers: [run],
      addPreviousOutputInEnv: false,
      logging: "stderr",
    },
    { parent },
  );
  const surveyed = pulumi.all([args.plan, survey.stdout]).apply(([plan, out]: [LaunchPlan, string]) => {
    const s = parseSurvey(out);
    const decision = decideRunbookAdoption({ plan, image: container?.image }, s);
    return { decision, attestation: runbookAttestationOf(decision, s) };
  });
  return { decision: surveyed.decision, attestation: surveyed.attestation };
}

/** The decision as the stack output `engines.<id>.runbook` reports it. */
export function runbookOutcome(d: RunbookDecision): RunbookOutcome {
  return { action: d.action, reason: d.reason, differences: d.action === "replace" ? d.differences : [] };
}
