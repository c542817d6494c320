import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { scriptContainerSpec, startScript, stopScript, type RunbookContainerTakeover } from "../../lib/runtime/docker-cli";
import type { RunbookDecision } from "../../lib/launch/runbook";
import { envFile } from "../../lib/shell";
import { containerRestartScript } from "../../lib/runtime/restart";
import { containerTarget, dockerCliOptions } from "../../lib/runtime/container-fields";
import { lastJsonLine } from "../../lib/json-line";
import { startKeyOf } from "./start-key";
import { runbookOutcome, runbookSurvey } from "./runbook";
import type { ContainerProcessArgs, EngineProcess, RunbookAdoption } from "./types";

function takeoverOf(d: RunbookDecision, run: string): RunbookContainerTakeover | undefined {
  if (d.action === "start" || !("containerId" in d.identity)) return undefined;
  return { action: d.action, containerId: d.identity.containerId, run, runbookPlanSha256: d.action === "adopt" ? d.runbookPlanSha256 : undefined, reason: d.reason };
}

function containerLaunch(args: Pick<ContainerProcessArgs, "plan" | "placement" | "runtime">) {
  return pulumi.all([args.plan, args.placement]).apply(([plan, placement]) => ({ plan, target: containerTarget(plan, args.runtime, placement) }));
}

/**
 * What replaces the container: its plan, its container spec (which covers what the plan hash does not:
 * image, devices, mounts, container environment) and the liveness epoch.
 */
export function dockerCliTriggers(args: Pick<ContainerProcessArgs, "plan" | "placement" | "runtime" | "restartEpoch" | "runDir">): pulumi.Input<unknown>[] {
  const opts = dockerCliOptions(args.runtime, args.runDir);
  return [args.plan.planSha256, containerLaunch(args).apply(({ plan, target }) => scriptContainerSpec(plan, target, opts).specSha256), args.restartEpoch];
}

/**
 * The engine as a container run by the docker CLI on its host (lib/runtime/docker-cli.ts): one remote
 * command whose create checks the image, reconciles (adopts or removes) this engine's containers and
 * runs one, and whose delete removes them all. The API key goes in as the native runtime's does: a
 * Pulumi secret on stdin, written on the host as a 0600 `--env-file`. Replaced when the launch plan or
 * the container spec (image, devices, mounts, environment) changes. With a runbook launch directory,
 * its create first keeps the launcher's container (when it serves this plan and image) or stops it.
 */
export function dockerCliProcess(name: string, args: ContainerProcessArgs, parent: pulumi.Resource): EngineProcess {
  const opts = dockerCliOptions(args.runtime, args.runDir);
  const run = args.runbookRun;
  const surveyed = run === undefined ? undefined : runbookSurvey(name, args, run, parent, { image: args.runtime.image!, dockerCommand: args.runtime.dockerCommand });
  const takeover = surveyed ? surveyed.decision.apply((d) => takeoverOf(d, run!)) : pulumi.output(undefined);
  const launch = containerLaunch(args);
  const process = new command.remote.Command(
    `${name}-process`,
    {
      connection: args.connection,
      create: pulumi.all([launch, takeover]).apply(([{ plan, target }, t]) => startScript(plan, target, opts, t)),
      delete: launch.apply(({ plan, target }) => stopScript(plan, target, opts)),
      stdin: pulumi.secret(pulumi.output(args.engineApiKey).apply((key) => envFile({ VLLM_API_KEY: key }))),
      // The spec hash covers what the plan hash does not: image, devices, mounts, container environment.
      triggers: dockerCliTriggers(args),
      // Neither script reads the previous output, and most sshd configs refuse extra variables.
      addPreviousOutputInEnv: false,
      logging: "stderr",
    },
    // The container name is unique on the daemon and the replacement binds the same ports.
    { parent, deleteBeforeReplace: true, dependsOn: args.after },
  );
  const started = process.stdout.apply((out) => lastJsonLine<{ containerId: string; startedAt: string; launchToken: string; adopted?: RunbookAdoption }>(out));
  return {
    identity: started.containerId.apply((containerId) => ({ hostAlias: args.hostAlias, containerId })),
    startedAt: started.startedAt,
    log: pulumi.output({ kind: "container" as const, dockerCommand: args.runtime.dockerCommand }),
    restartScript: pulumi
      .all([args.plan, started.containerId])
      .apply(([plan, id]) => containerRestartScript(
          plan,
          args.runtime.dockerCommand,
          id,
          { stop: args.runtime.deadlinesS.stop, health: args.runtime.deadlinesS.start },
          { runDir: args.runDir, inspectS: args.runtime.deadlinesS.inspect },
        ),
      ),
    resources: [process],
    // Run again without being replaced (a re-pinned host key), the start's reconcile adopts the container
    // running this plan and spec and prints its id again: the start stands while its triggers do.
    startKey: startKeyOf(process),
    adopted: started.apply((s) => s.adopted),
    ...(surveyed ? { runbook: surveyed.decision.apply(runbookOutcome), runbookAttestation: surveyed.attestation } : {}),
  };
}
