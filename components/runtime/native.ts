import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import type { RunbookDecision } from "../../lib/launch/runbook";
import { startScript, stopScript, type RunbookTakeover } from "../../lib/runtime/native";
import { nativeRestartScript } from "../../lib/runtime/restart";
import { envFile } from "../../lib/shell";
import { nativeEngineLogs } from "../../lib/engine/log-source";
import { lastJsonLine } from "../../lib/json-line";
import { startKeyOf } from "./start-key";
import { runbookOutcome, runbookSurvey } from "./runbook";
import type { EngineProcess, NativeProcessArgs, RunbookAdoption } from "./types";

function takeoverOf(d: RunbookDecision, run: string): RunbookTakeover | undefined {
  if (d.action === "start" || !("pid" in d.identity)) return undefined;
  return { action: d.action, ...d.identity, run, runbookPlanSha256: d.action === "adopt" ? d.runbookPlanSha256 : undefined, reason: d.reason };
}

/** What replaces the native process: its plan, the host's vLLM version, the liveness epoch. */
export function nativeTriggers(args: Pick<NativeProcessArgs, "plan" | "runtimeVersion" | "restartEpoch">): pulumi.Input<unknown>[] {
  return [args.plan.planSha256, args.runtimeVersion, args.restartEpoch];
}

/**
 * The engine as a native process on its host (lib/runtime/native.ts): one remote command whose create
 * starts it and whose delete stops its process group. Replaced when the launch plan or the host's vLLM
 * version changes. With a runbook launch directory, its create first adopts the launcher's engine (when
 * it serves this plan) or stops it (when not, printing why).
 */
export function nativeProcess(name: string, args: NativeProcessArgs, parent: pulumi.Resource): EngineProcess {
  const runtime = { runDir: args.runDir, healthTimeoutS: args.healthTimeoutS, stopTimeoutS: args.stopTimeoutS };
  const run = args.runbookRun;
  const surveyed = run === undefined ? undefined : runbookSurvey(name, args, run, parent);
  const decision = surveyed?.decision;
  const takeover = decision ? decision.apply((d) => takeoverOf(d, run!)) : pulumi.output(undefined);
  const triggers = nativeTriggers(args);
  const process = new command.remote.Command(
    `${name}-process`,
    {
      connection: args.connection,
      create: pulumi.all([args.plan, takeover]).apply(([p, t]) => startScript(p, { ...runtime, runbook: t })),
      delete: args.plan.apply((p) => stopScript(p, runtime)),
      stdin: pulumi.secret(pulumi.output(args.engineApiKey).apply((key) => envFile({ VLLM_API_KEY: key }))),
      triggers,
      // Neither script reads the previous output, and most sshd configs refuse extra variables.
      addPreviousOutputInEnv: false,
      logging: "stderr",
    },
    // The replacement binds the same port, so the old process must be gone first.
    { parent, deleteBeforeReplace: true, dependsOn: args.after },
  );
  const started = process.stdout.apply((out) => lastJsonLine<{ pid: number; startedAt: string; adopted?: RunbookAdoption }>(out));
  return {
    // An adopted runbook engine keeps writing where its launcher sent it, until a restart from the run folder.
    log: pulumi.output(nativeEngineLogs(args.runDir, run)),
    identity: started.pid.apply((pid) => ({ hostAlias: args.hostAlias, pid })),
    startedAt: started.startedAt,
    restartScript: args.plan.apply((p) => nativeRestartScript(p, args.runDir, { stop: args.stopTimeoutS, health: args.healthTimeoutS })),
    resources: [process],
    startKey: startKeyOf(process),
    adopted: started.apply((s) => s.adopted),
    ...(decision ? { runbook: decision.apply(runbookOutcome) } : {}),
    ...(surveyed ? { runbookAttestation: surveyed.attestation } : {}),
  };
}
