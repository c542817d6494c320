/**
 * What every engine runtime backend takes and gives back. Three backends run one launch plan:
 * `native` (a process on the host), `docker-cli` (the docker client over SSH, with launch tokens and
 * reconcile) and `docker` (@pulumi/docker resources over the docker provider's own SSH transport).
 * They differ in how the engine starts, never in what it runs: the launch plan and, for containers,
 * the one container spec of lib/runtime/container-spec.ts.
 */
import type * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import type { RuntimeSpec } from "../../lib/config/types";
import type { LaunchPlan } from "../../lib/launch/plan";
import type { ProcessIdentity } from "../../lib/engine/generation";
import type { RunbookAttestationSource } from "../../lib/attestation/runbook-document";
import type { EngineLogSource } from "../../lib/engine/log-source";

export type { ProcessIdentity } from "../../lib/engine/generation";

/** The running engine, as every backend reports it. */
import type { ContainerPlacement } from "../../lib/runtime/container-fields";
export type { ContainerPlacement };

export interface EngineProcess {
  /** Who owns the engine's endpoint: `{hostAlias, pid}` (native) or `{hostAlias, containerId}` (containers). */
  identity: pulumi.Output<ProcessIdentity>;
  /** When the process (or container) started, as the host reported it. */
  startedAt: pulumi.Output<string>;
  /** Stops the engine and starts the same plan again (lib/runtime/restart.ts): the peer wave runs it. */
  restartScript: pulumi.Output<string>;
  /** Where the running engine's stdout and stderr are on its host: Gate C's cache capture reads its startup lines there. */
  log: pulumi.Output<EngineLogSource>;
  /** Everything the backend registered that later steps must wait for (`dependsOn`). */
  resources: pulumi.Resource[];
  /** Where the start's command is one whose re-run adopts its process: the digest of what replaces it (./start-key.ts). */
  startKey?: pulumi.Output<string>;
  /** When the engine has a runbook launch directory: what was done with the runbook's engine, and why. */
  runbook?: pulumi.Output<RunbookOutcome>;
  /** Set when the engine is the runbook launcher's process, kept running (lib/launch/runbook.ts). */
  adopted?: pulumi.Output<RunbookAdoption | undefined>;
  /** An adopted runbook engine's sidecar document (`<run>/engine-attestation.json`), when it has one. */
  runbookAttestation?: pulumi.Output<RunbookAttestationSource | undefined>;
}

/** An adopted runbook engine: the launch directory and the launcher's own plan hash. */
export interface RunbookAdoption {
  readonly launcher: "runbook";
  readonly run: string;
  readonly planSha256: string | null;
}

/** The survey's decision (lib/launch/runbook.ts), as the stack reports it. */
export interface RunbookOutcome {
  readonly action: "start" | "adopt" | "replace";
  readonly reason: string;
  readonly differences: ReadonlyArray<{ field: string; runbook: string; program: string }>;
}

/** What every backend needs. */
export interface ProcessArgs {
  hostAlias: string;
  /** The engine's launch plan: what runs, whatever the backend, and where (its `placement`: GPU ids, vendor, transport, RDMA devices). */
  plan: pulumi.Output<LaunchPlan>;
  /** SSH connection to the engine's host, with its verified host key pinned. */
  connection: pulumi.Input<command.types.input.remote.ConnectionArgs>;
  /** Secret: reaches the engine only through stdin (an env file on the host) or a secret container env. */
  engineApiKey: pulumi.Input<string>;
  /** Per-engine folder on the host (absolute): pid or container files, the private env file. */
  runDir: string;
  /** The runbook launch directory (`engines[].runbookRun`) whose running engine may be adopted. */
  runbookRun?: string;
  /**
   * The engine's liveness epoch (dynamic-providers/liveness): a new one, minted when a refresh found
   * the engine dead, hung or gone, restarts it. Every backend folds it into what replaces its process.
   */
  restartEpoch: pulumi.Input<string>;
  /** What must finish before the running engine is stopped or replaced: its drain on the serving router. */
  after?: pulumi.Resource[];
}

/** The native backend: exactly today's inputs. */
export interface NativeProcessArgs extends ProcessArgs {
  /**
   * The vLLM version discovery read from the host's `vllm` (a container's comes with its image, in the
   * plan): a process keeps serving the version it loaded, so an in-place upgrade must restart it.
   */
  runtimeVersion: pulumi.Input<string>;
  healthTimeoutS: number;
  stopTimeoutS: number;
}


/** Both container backends. */
export interface ContainerProcessArgs extends ProcessArgs {
  /** `FleetSpec.runtime`: image (immutable), docker client, deadlines. */
  runtime: RuntimeSpec;
  /** The model mount and the stack name; the GPUs and devices come from the plan. */
  placement: pulumi.Input<ContainerPlacement>;
}

/**
 * Where per-host resources live. The docker backend needs one `docker.Provider` per host, shared by
 * every engine on it; the first engine of a host creates it under `parent` as `<name>-docker`, the
 * others reuse it.
 */
export interface HostScope {
  /** Name prefix of per-host resources, e.g. the host's discovery name `fleet-a`. */
  readonly name: string;
  /** The component that owns every engine on the host (the Fleet), so no engine's delete takes the provider along. */
  readonly parent: pulumi.Resource;
}

/**
 * The known_hosts files the docker backend's ssh reads, one per host, with each host's pinned key. Given
 * by the program's entry (entry/known-hosts.ts): components do no I/O, and the docker backend calls
 * `write` where the pinned key is first known (docker-host.ts).
 */
export interface KnownHostsFiles {
  /** Local folder (absolute) that holds them; a stable one, since `pulumi destroy` dials with the sshOpts in state. */
  readonly dir: string;
  /** Writes `text` as the file `file` (in `dir`), readable by its owner alone. */
  write(file: string, text: string): void;
}

/** The docker (@pulumi/docker) backend. */
export interface DockerProcessArgs extends ContainerProcessArgs {
  hostScope: HostScope;
  /** The known_hosts files the docker provider's local `ssh` reads to reach the daemon. */
  knownHosts: KnownHostsFiles;
}

/** Everything {@link engineProcess} may hand to whichever backend `runtime.kind` picks. */
export type EngineProcessArgs = NativeProcessArgs & DockerProcessArgs;
