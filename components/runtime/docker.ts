import * as pulumi from "@pulumi/pulumi";
import * as docker from "@pulumi/docker";
import * as command from "@pulumi/command";
import { gpuWait, scriptContainerSpec } from "../../lib/runtime/docker-cli";
import { shq } from "../../lib/shell";
import { containerRestartScript } from "../../lib/runtime/restart";
import { dockerHealthWaitScript } from "../../lib/runtime/docker-health";
import { containerTarget, dockerCliOptions, dockerContainerSpec } from "../../lib/runtime/container-fields";
import { dockerHostProvider } from "./docker-host";
import type { DockerProcessArgs, EngineProcess } from "./types";

function containerSpecOf(args: Pick<DockerProcessArgs, "plan" | "placement" | "runtime" | "runDir">) {
  const opts = dockerCliOptions(args.runtime, args.runDir);
  return pulumi.all([args.plan, args.placement]).apply(([plan, placement]) =>
    dockerContainerSpec(scriptContainerSpec(plan, containerTarget(plan, args.runtime, placement), opts), plan.url, args.runtime.deadlinesS),
  );
}

/** The container's labels: a new plan, spec or liveness epoch is a new label, and `replaceOnChanges: ["labels"]` starts a fresh container. */
function dockerLabels(spec: ReturnType<typeof containerSpecOf>, restartEpoch: pulumi.Input<string>) {
  return pulumi.all([spec.fields.labels, restartEpoch]).apply(([ls, epoch]) => [...ls, { label: "narwhal.liveness-epoch", value: epoch }]);
}

/** What replaces the container (its labels), as the GPU wait's triggers hold it. */
export function dockerTriggers(args: Pick<DockerProcessArgs, "plan" | "placement" | "runtime" | "runDir" | "restartEpoch">): pulumi.Input<unknown>[] {
  return [dockerLabels(containerSpecOf(args), args.restartEpoch)];
}

/**
 * The engine as a @pulumi/docker Container on its host's daemon, through the host's docker provider
 * (docker-host.ts: SSH with the pinned key). The Container carries exactly the fields of the one
 * container spec the docker-cli backend runs (container-fields.ts reads them out of its argv), so the
 * two backends differ in who drives the daemon, not in what runs (container-fields.ts says why the
 * spec hash label still differs):
 *   - image: the immutable ID or digest itself, with no RemoteImage, so nothing is ever pulled by tag
 *     (an image ID cannot be pulled at all; the provider pulls a `repo@sha256:` digest that is not on the
 *     host yet, that exact digest, as docker-cli's start does);
 *   - host network and IPC, the selected GPUs only (`gpus` for NVIDIA, `/dev/kfd` + render nodes for
 *     ROCm), RDMA devices, the model read-only at `/model`, restart "no";
 *   - a healthcheck on `/health` for the daemon's own account; the wait for it is not the provider's
 *     `wait` but a remote command (`-health`, lib/runtime/docker-health.ts) that, when the container exits
 *     first or the start deadline passes, keeps the container's log and inspect output in the run folder's
 *     `attempts/` before the error: the provider's own wait gives up keeping nothing, and the refresh or
 *     replacement that follows removes the container with its log. Everything downstream of the engine
 *     waits for that command (the identity carries it);
 *   - labels with the plan and spec hashes, and `replaceOnChanges: ["labels"]`: a new plan or spec
 *     replaces the container (old one first: the name is unique and the ports are the host's).
 * The API key is one entry of `envs`, and the whole `envs` list is a Pulumi secret (and a secret output),
 * so it is encrypted in state and never shown by preview. It is visible to `docker inspect` on the host,
 * exactly as the docker-cli backend's `--env-file` entries are; whoever can reach the daemon is root there
 * anyway. Other ways are not safer: a command-line `--api-key` shows in every process listing, and an
 * uploaded file would sit in state as well and need a wrapper entrypoint the vLLM image does not have.
 *
 * @pulumi/docker has no output for the container's start time, so a small remote command reads
 * `State.StartedAt` once per container id (with the runtime's inspect deadline).
 */
export function dockerProcess(name: string, args: DockerProcessArgs, parent: pulumi.Resource): EngineProcess {
  const d = args.runtime.deadlinesS;
  const opts = dockerCliOptions(args.runtime, args.runDir);
  const provider = dockerHostProvider(args.hostScope, args.hostAlias, args.connection, args.knownHosts);
  const spec = containerSpecOf(args);
  const fields = spec.fields;
  const labels = dockerLabels(spec, args.restartEpoch);
  const dockerCmd = shq(args.runtime.dockerCommand);

  // Engines sharing a GPU start one after the other: a container waits, bounded, until no other engine's
  // container holds its GPUs. Deleted before its replacement (and so after its container), so two engines
  // swapping GPUs both stop first and neither waits on the other.
  const gpuFree = new command.remote.Command(
    `${name}-gpu-wait`,
    {
      connection: args.connection,
      create: pulumi
        .all([args.plan, args.placement])
        .apply(([plan, placement]) => `set -eu\ndocker=${dockerCmd}\n${gpuWait(plan, containerTarget(plan, args.runtime, placement), opts)}`),
      triggers: [labels],
      addPreviousOutputInEnv: false,
      logging: "stderr",
    },
    { parent, deleteBeforeReplace: true, dependsOn: args.after },
  );

  const container = new docker.Container(
    `${name}-container`,
    {
      name: fields.name,
      image: fields.image,
      command: fields.command,
      envs: pulumi.secret(pulumi.all([fields.envs, args.engineApiKey]).apply(([envs, key]) => [...envs, `VLLM_API_KEY=${key}`])),
      labels,
      networkMode: fields.networkMode,
      ipcMode: fields.ipcMode,
      mounts: fields.mounts,
      devices: fields.devices,
      gpus: fields.gpus,
      runtime: fields.runtime,
      groupAdds: fields.groupAdds,
      securityOpts: fields.securityOpts,
      capabilities: fields.capAdds.apply((adds) => (adds.length > 0 ? { adds } : undefined)),
      ulimits: fields.ulimits,
      restart: "no",
      mustRun: true,
      healthcheck: spec.healthcheck,
      // The provider's wait keeps nothing of a failed start: `-health` below waits instead.
      wait: false,
      stopTimeout: d.stop,
      destroyGraceSeconds: d.stop,
    },
    {
      parent,
      provider,
      replaceOnChanges: ["labels"],
      deleteBeforeReplace: true,
      additionalSecretOutputs: ["envs"],
      dependsOn: [gpuFree, ...(args.after ?? [])],
    },
  );

  const health = new command.remote.Command(
    `${name}-health`,
    {
      connection: args.connection,
      create: pulumi.all([args.plan, container.id, fields.name, fields.image, fields.command]).apply(([plan, id, cname, image, cmd]) =>
        dockerHealthWaitScript(plan, id, {
          dockerCommand: args.runtime.dockerCommand,
          inspectS: d.inspect,
          runDir: args.runDir,
          startS: d.start,
          command: `@pulumi/docker Container ${cname}: ${[image, ...cmd].join(" ")}`,
        }),
      ),
      triggers: [container.id],
      addPreviousOutputInEnv: false,
      logging: "stderr",
    },
    { parent },
  );

  const started = new command.remote.Command(
    `${name}-started`,
    {
      connection: args.connection,
      create: container.id.apply((id) => `set -eu\ntimeout -k 5 ${d.inspect} ${dockerCmd} inspect --format '{{.State.StartedAt}}' ${shq(id)}\n`),
      triggers: [container.id],
      addPreviousOutputInEnv: false,
      logging: "stderr",
    },
    { parent, dependsOn: [health] },
  );

  // No start key (./start-key.ts): the identity is the Container's id, and a re-pinned host key changes
  // neither the provider's host nor its sshOpts (the key is in the known_hosts file, not in them), so the
  // container is left alone and its id stays known in a preview. The commands do run again under the new
  // connection; of what they print, only `-started`'s start time goes on, to the engine's startedAt
  // output, which no evidence takes.
  return {
    // The id as the health wait printed it: whatever takes the identity waits for /health.
    identity: pulumi.all([container.id, health.stdout]).apply(([containerId]) => ({ hostAlias: args.hostAlias, containerId })),
    startedAt: started.stdout.apply((out) => out.trim()),
    log: pulumi.output({ kind: "container" as const, dockerCommand: args.runtime.dockerCommand }),
    restartScript: pulumi
      .all([args.plan, container.id])
      .apply(([plan, id]) => containerRestartScript(plan, args.runtime.dockerCommand, id, { stop: d.stop, health: d.start }, { runDir: args.runDir, inspectS: d.inspect })),
    resources: [gpuFree, container, health, started],
  };
}
