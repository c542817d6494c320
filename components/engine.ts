import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import { OpaqueComponent } from "./opaque-component";
import type { RuntimeSpec } from "../lib/config/types";
import { cacheExpectations, launchRecord, type LaunchPlan } from "../lib/launch/plan";
import type { RunbookAttestationSource } from "../lib/attestation/runbook-document";
import { EngineGeneration } from "../dynamic-providers/engine-generation/resource";
import { CacheCapture } from "../dynamic-providers/cache-capture/resource";
import type { EngineLogAccess } from "../dynamic-providers/preflight/engine-logs";
import { checkRuntimeOf, ImageCheck } from "../dynamic-providers/image-check/resource";
import { RUNTIME_CHECK_SHA256 } from "../lib/image-check/commands";
import { loginInputs, loginSecrets } from "./login-inputs";
import { Liveness } from "../dynamic-providers/liveness/resource";
import { EngineDrain } from "../dynamic-providers/engine-drain/resource";
import { drainBoundS, drainScript, kvLeaseOf } from "../lib/router/drain";
import type { StoredLogin } from "../lib/ssh/stored-login";
import { engineProcess, HostScope, processStopKey, ProcessIdentity, type KnownHostsFiles, type RunbookOutcome } from "./runtime";

export interface EngineArgs {
  /** The launch plan Gate A rendered (components/discovery.ts), known once the host's discovery has resolved. */
  plan: pulumi.Input<LaunchPlan>;
  hostAlias: string;
  servedName: string;
  /** SSH connection to the engine's host, with its verified host key pinned. */
  connection: pulumi.Input<command.types.input.remote.ConnectionArgs>;
  /** Secret: reaches the engine only through its private env file. */
  engineApiKey: pulumi.Input<string>;
  /** Per-engine folder on the host. */
  runDir: string;
  /** The vLLM version discovery read: the image check pins the runtime to it (the live `/version` must equal what the check found). */
  expectedVersion: pulumi.Input<string>;
  healthTimeoutS: number;
  stopTimeoutS: number;
  /** `FleetSpec.runtime`: `kind` picks the backend (native, docker-cli, docker); image, docker client, deadlines. */
  runtime: RuntimeSpec;
  /** Checkpoint directory on the host, mounted read-only at `/model` in a container. */
  modelDir: string;
  /** Stack name: part of the container name and labels. */
  stack: string;
  /** Where per-host resources (the docker backend's provider) live; default this engine itself, named `<name>-<hostAlias>`. */
  hostScope?: HostScope;
  /** The known_hosts files the docker backend's ssh reads (the program's entry gives them: entry/known-hosts.ts). */
  knownHosts: KnownHostsFiles;
  /** `engines[].runbookRun`: the runbook launch directory whose running engine may be adopted. */
  runbookRun?: string;
  /**
   * `runtime.restartKvPeers`: the other engines of its KV component, and the wave that restarts them
   * together; the live proof comes after the wave and is bound to the peers' processes.
   */
  kvPeers?: {
    /**
     * Each peer field its own input, so a preview that cannot know one peer's identity yet still sees the
     * rest; none where the component's restart scope is one engine (lib/engine/restart-scope.ts).
     */
    peers: pulumi.Input<Record<string, KvPeer> | undefined>;
    wave: pulumi.Input<pulumi.Resource[]>;
  };
  /** The serving router, which drains the engine before the program replaces its process (lib/router/drain.ts). */
  router: EngineRouter;
}

/** Where the engine's drain runs: the router host (its login, built once for every engine), its narwhal venv and narwhal-serve's loopback port. */
export interface EngineRouter {
  hostAlias: string;
  login: pulumi.Output<StoredLogin>;
  /** Secret: that login's credentials. */
  credentials: pulumi.Output<{ privateKey?: string; password?: string }>;
  /** The router host's narwhal install bin folder (its python runs the drain). */
  binDir: string;
  backendPort: number;
}

/** A KV peer as a generation holds it: where it serves, who owns it, and its start command's key (./runtime/start-key.ts). */
export interface KvPeer {
  url: pulumi.Input<string>;
  processIdentity: pulumi.Input<ProcessIdentity>;
  processStartKey?: pulumi.Input<string | undefined>;
}

/**
 * One vLLM engine on its host (Gate C's "start" step), run by the backend `runtime.kind` names: a native
 * process, a container through the docker CLI, or a @pulumi/docker container (components/runtime).
 * Replaced when its launch plan (or, for containers, its container spec) changes; stopped on delete.
 */
export class Engine extends OpaqueComponent {
  /** The launch plan: the recorded command, and where it runs (GPU ids, vendor, visibility variable, transport). */
  public readonly plan: pulumi.Output<LaunchPlan>;
  public readonly url: pulumi.Output<string>;
  /** The engine's process id on its host; undefined for a container (see `identity`). */
  public readonly pid: pulumi.Output<number | undefined>;
  /** Who owns the endpoint: `{hostAlias, pid}` or `{hostAlias, containerId}`. */
  public readonly identity: pulumi.Output<ProcessIdentity>;
  /** Where the start command's re-run adopts its process: the digest of what replaces it (./runtime/start-key.ts). */
  public readonly startKey?: pulumi.Output<string>;
  public readonly startedAt: pulumi.Output<string>;
  /** Stops the engine and starts the same plan again, waiting for /health: what a peer wave runs. */
  public readonly restartScript: pulumi.Output<string>;
  /** With a runbook launch directory: what was done with the runbook's engine, and why. */
  public readonly runbook: pulumi.Output<RunbookOutcome | undefined>;
  /** `engines[].runbookRun`, when set: its sidecar on the attestation port is the program's to stop. */
  public readonly runbookRun: string | undefined;
  /** An adopted runbook engine's sidecar document, which attestation serves while it is still true. */
  public readonly runbookAttestation: pulumi.Output<RunbookAttestationSource | undefined>;
  /** Gate C's image check of this engine's runtime against its plan; the process starts only after it passes. */
  public readonly imageCheck: ImageCheck;
  /** Whether the started engine still serves; a refresh that finds it down restarts it in the next up. */
  public readonly liveness: Liveness;
  public readonly generation: EngineGeneration;
  public readonly cache: CacheCapture;
  /** Where the engine's log is and the login to its host: what the preflight reads a failing engine's log tail with. */
  public readonly logAccess: pulumi.Output<EngineLogAccess>;
  /** Drains the engine on the serving router before each replacement of its process; `lastDrain` says how the last one went. */
  public readonly drain: InstanceType<typeof EngineDrain>;
  /** That login's secrets (a Pulumi secret). */
  public readonly hostSecrets: pulumi.Output<{ privateKey?: string; password?: string }>;

  constructor(name: string, args: EngineArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:engine:Engine", name, {}, opts);
    this.plan = pulumi.output(args.plan);
    this.imageCheck = new ImageCheck(
      `${name}-image-check`,
      {
        engineId: this.plan.engineId,
        hostAlias: args.hostAlias,
        stack: args.stack,
        ...loginInputs(args.connection),
        // The record alone: the check's launch.json and inputs hold the command, not where it runs.
        plan: this.plan.apply(launchRecord),
        planSha256: this.plan.planSha256,
        runtime: checkRuntimeOf(args.runtime),
        modelDir: args.modelDir,
        pins: pulumi.output(args.expectedVersion).apply((vllm) => ({ vllm })),
        dsRequired: this.plan.dsRequired,
        checkScriptSha256: RUNTIME_CHECK_SHA256,
        deadlines: { inspectS: args.runtime.deadlinesS.inspect, checkS: args.runtime.deadlinesS.start },
      },
      { parent: this },
    );
    // The check's URN is known even in preview, so this orders the start after the check without making the plan unknown.
    const checkedPlan = pulumi.all([this.plan, this.imageCheck.urn]).apply(([plan]) => plan);

    this.liveness = new Liveness(
      `${name}-liveness`,
      { service: "engine", name: this.plan.engineId, hostAlias: args.hostAlias, url: this.plan.url, healthDeadlineS: args.runtime.deadlinesS.health },
      { parent: this },
    );

    const processArgs = {
      hostAlias: args.hostAlias,
      plan: checkedPlan,
      runtimeVersion: args.expectedVersion,
      connection: args.connection,
      engineApiKey: args.engineApiKey,
      runDir: args.runDir,
      runbookRun: args.runbookRun,
      restartEpoch: this.liveness.epoch,
      healthTimeoutS: args.healthTimeoutS,
      stopTimeoutS: args.stopTimeoutS,
      runtime: args.runtime,
      placement: { modelDir: args.modelDir, stack: args.stack },
      hostScope: args.hostScope ?? { name: `${name}-${args.hostAlias}`, parent: this },
      knownHosts: args.knownHosts,
    };
    // Keyed by exactly what replaces the process, so it runs just before each replacement (Gate C's stop).
    const drainRun = this.plan.apply((plan) => {
      const drain = { python: `${args.router.binDir}/python`, backendPort: args.router.backendPort, engineId: plan.engineId, deadlineS: args.stopTimeoutS, engineUrl: plan.url, kvLeaseS: kvLeaseOf(plan.argv) };
      return { script: drainScript(drain), timeoutS: drainBoundS(drain) };
    });
    this.drain = new EngineDrain(
      `${name}-drain`,
      {
        engineId: this.plan.engineId,
        hostAlias: args.router.hostAlias,
        login: args.router.login,
        credentials: args.router.credentials,
        script: drainRun.script,
        stopKey: processStopKey(args.runtime.kind, processArgs),
        timeoutS: drainRun.timeoutS,
      },
      { parent: this },
    );
    const running = engineProcess(args.runtime.kind, name, { ...processArgs, after: [this.drain] }, this);
    this.url = this.plan.url;
    this.identity = running.identity;
    this.startKey = running.startKey;
    this.pid = running.identity.apply((id) => id.pid);
    this.startedAt = running.startedAt;
    this.restartScript = running.restartScript;
    this.runbook = running.runbook ?? pulumi.output(undefined);
    this.runbookRun = args.runbookRun;
    this.runbookAttestation = running.runbookAttestation ?? pulumi.output(undefined);
    const identity = this.identity;

    // Gate C's live-process proof; a refresh re-probes it, so a restarted engine shows as a new generation.
    this.generation = new EngineGeneration(
      `${name}-generation`,
      {
        engineId: this.plan.engineId,
        hostAlias: args.hostAlias,
        url: this.url,
        planSha256: this.plan.planSha256,
        expectedVersion: this.imageCheck.vllmApiVersion,
        servedName: args.servedName,
        apiKey: args.engineApiKey,
        processIdentity: identity,
        ...(running.startKey ? { processStartKey: running.startKey } : {}),
        probeTimeoutS: args.healthTimeoutS,
        stack: args.stack,
        ...(running.adopted ? { adopted: running.adopted } : {}),
        ...(args.kvPeers ? { peers: args.kvPeers.peers } : {}),
      },
      { parent: this, dependsOn: args.kvPeers ? pulumi.output(args.kvPeers.wave).apply((wave) => [...running.resources, ...wave]) : running.resources },
    );
    // The cache geometry the live engine actually resolved (its startup log, /metrics and the model's
    // config.json), bound to the generation it was read from.
    this.cache = new CacheCapture(
      `${name}-cache`,
      {
        engineId: this.plan.engineId,
        hostAlias: args.hostAlias,
        url: this.url,
        generationDigest: this.generation.generationDigest,
        planSha256: this.plan.planSha256,
        processIdentity: identity,
        ...(running.startKey ? { processStartKey: running.startKey } : {}),
        expected: this.plan.apply(cacheExpectations),
        apiKey: args.engineApiKey,
        ...loginInputs(args.connection),
        engineLog: running.log,
        modelDir: args.modelDir,
        stack: args.stack,
        runDir: args.runDir,
      },
      { parent: this },
    );
    const login = loginInputs(args.connection);
    this.logAccess = pulumi.all([this.plan.engineId, login.login, running.log, identity]).apply(([engineId, stored, engineLog, id]) => ({
      engineId,
      hostAlias: args.hostAlias,
      login: stored,
      engineLog,
      ...(id.containerId ? { containerId: id.containerId } : {}),
    }));
    this.hostSecrets = loginSecrets(login);
    this.registerOutputs({ plan: this.plan, url: this.url, pid: this.pid, identity: this.identity, startedAt: this.startedAt });
  }
}
