import * as pulumi from "@pulumi/pulumi";
import { OpaqueComponent } from "./opaque-component";
import type { EngineSpec, FleetSpec } from "../lib/config/types";
import type { ReplicaAgreement } from "../dynamic-providers/replica-agreement/resource";
import type { DeploymentConfig } from "../dynamic-providers/deployment-config/resource";
import { kvPeerWiring } from "./peer-wave";
import type { PeerWave } from "../dynamic-providers/peer-wave/resource";
import { Engine, type EngineRouter } from "./engine";
import { loginInputs, loginSecrets } from "./login-inputs";
import { narwhalBinDir } from "./router/install";
import { routerBackendPort } from "../lib/router/front";
import type { DrainOutcome } from "../lib/router/drain";
import type { KnownHostsFiles, RunbookOutcome } from "./runtime";
import type { FleetSecrets, LocalFiles } from "./fleet-inputs";
import { Discovery, type HostSummary } from "./discovery";
import type { SshConfig } from "../lib/ssh/ssh-config/resolve";
import { cacheSummary, CacheGroupSummary } from "../lib/fleet/cache-summary";
import type { RuntimeIdentity } from "../lib/discovery/runtime";
import { FabricMesh } from "./fabric";
import { AttestationMesh } from "./attestation";
import { ProfileMesh } from "./profiles";
import { RouterHost, type NarwhalInstall } from "./router";
import { narwhalInstalls } from "./narwhal-installs";
import { preflight } from "./preflight";
import type { Preflight } from "../dynamic-providers/preflight/resource";
import { calibration } from "./calibration";
import type { Calibration } from "../dynamic-providers/calibration/resource";
import { sanitisedFleetDocument } from "../lib/fleet/sanitised-document";
import { stackDirOn } from "../lib/fleet/state-dir";
import { capacityTrial } from "./trial";
import type { LoadTrial } from "../dynamic-providers/load-trial/resource";
import type { RecordedDeployment, RolloutRecord } from "../lib/rollout/decide";

export type { HostSummary } from "./discovery";

export interface FleetArgs {
  spec: FleetSpec;
  secrets: FleetSecrets;
  /** Names the per-stack folders on hosts, so two stacks never share an engine's run folder. */
  stack: string;
  /** The operator's ssh_config, for destinations that are OpenSSH aliases. */
  sshConfig?: SshConfig;
  /** What the program's entry read from this machine's files (entry/local-files.ts); components read none. */
  localFiles: LocalFiles;
  /** The docker backend's known_hosts files, written by the program's entry (entry/known-hosts.ts); components write none. */
  knownHosts: KnownHostsFiles;
  /** What the stack's last deployment recorded, read by the entry (entry/recorded-outputs.ts): a rolling change continues from it. */
  recorded?: pulumi.Input<RecordedDeployment>;
}

export interface EngineSummary {
  host: string;
  role: "prefill" | "decode";
  url: string;
  /** Native engines only; a container engine is known by its container id. */
  pid?: number;
  startedAt: string;
  planSha256: string;
  /** Host GPU indices the engine uses, as its launch plan resolved them (every GPU of the host when the config names none). */
  gpuIds: number[];
  /** The live process this engine's evidence is bound to (Gate C). */
  generationDigest: string;
  /** The cache geometry the live engine resolved. */
  cacheLayoutDigest: string;
  /** With `engines[].runbookRun`: whether the runbook's engine was adopted, replaced (and why), or absent. */
  runbook?: RunbookOutcome;
  /** What the serving router did before the program last replaced the engine's process (lib/router/drain.ts). */
  lastDrain?: DrainOutcome & { at: string };
}

/**
 * The whole fleet, gate by gate: discovery, launch plans and the replica agreement (Gate A), then the
 * engines (Gate C), the fabric, attestation, profiles and preflight, and the router host.
 */
export class Fleet extends OpaqueComponent {
  /** Gate A: per-host discovery, launch plans, replica agreement and the generated configuration. */
  public readonly discovery: Discovery;
  public readonly hosts: pulumi.Output<Record<string, HostSummary>>;
  public readonly engines: pulumi.Output<Record<string, EngineSummary>>;
  public readonly routerHost: string;
  public readonly replicas: ReplicaAgreement;
  public readonly deploymentConfig: DeploymentConfig;
  /** Cache-equivalence groups and their fabric budgets, from every engine's captured layout. */
  public readonly cacheGroups: pulumi.Output<CacheGroupSummary[]>;
  /** Gate D: the directed fabric edges, measured one at a time after every cache capture, and their gate. */
  public readonly fabric: FabricMesh;
  /** Gate E: a sidecar and an attestation per engine after fabric qualification, and the fleet's engine_contract. */
  public readonly attestation: AttestationMesh;
  /** Gate F's profiling: a Profile per engine after its attestation, and the store on the router host. */
  public readonly profiles: ProfileMesh;
  /** Gate F's preflight after the profile store; the router starts only after it passes. */
  public readonly preflight: Preflight;
  /** Gate F's first-token deadline calibration after preflight, when `calibration.enabled`. */
  public readonly calibration?: Calibration;
  /** Gate B: per host alias, the narwhal install the router host and every engine host's sidecars run from. */
  public readonly narwhalInstalls: ReadonlyMap<string, NarwhalInstall>;
  /** Gate G: the router and monitoring on the router host. */
  public readonly routerHostResources: RouterHost;
  /** Gate G's capacity trial: one LoadTrial per `trial.points` entry, in order, after the router's proof. */
  public readonly trialPoints: LoadTrial[];
  /** The fleet document with every engine address replaced by its host alias. */
  public readonly sanitisedFleetDocument: pulumi.Output<Record<string, unknown>>;
  /** With `runtime.restartKvPeers`: one restart wave per KV component. */
  public readonly peerWaves: PeerWave[];
  /** With `runtime.restartKvPeers`: per KV component, its engines and who restarts with one of them, and why. */
  public readonly restartScopes?: pulumi.Output<Array<{ engines: string[]; kind: "component" | "engine"; reason: string }>>;
  /** Which rolling settings each engine runs after this up, and the rollout's progress (lib/rollout). */
  public readonly rollout: pulumi.Output<RolloutRecord>;
  /** Each engine's spec and resources, in config order (for stack outputs that list per-engine evidence). */
  public readonly engineParts: ReadonlyArray<{ spec: EngineSpec; engine: Engine }>;

  constructor(name: string, args: FleetArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:fleet:Fleet", name, {}, opts);
    const { spec } = args;

    this.discovery = new Discovery(`${name}-discovery`, { spec, secrets: args.secrets, stack: args.stack, sshConfig: args.sshConfig, identityKeys: args.localFiles.identityKeys, prefix: name, recorded: args.recorded }, { parent: this });
    // The preview and the up say which engines a rolling change moves now and which it keeps, and why.
    this.discovery.rollout.apply((d) => d.message && (d.outage ? pulumi.log.warn(d.message, this) : pulumi.log.info(d.message, this)));
    const hosts = this.discovery.hosts;
    this.replicas = this.discovery.replicas;
    // Every engine is drained on the serving router before its process is replaced.
    const routerHost = this.discovery.routerHost;
    const routerLogin = loginInputs(hosts.get(routerHost)!.connection);
    const engineRouter: EngineRouter = {
      hostAlias: routerHost,
      login: routerLogin.login,
      credentials: loginSecrets(routerLogin),
      binDir: narwhalBinDir(spec.router.narwhal, `${stackDirOn(spec, routerHost, args.stack)}/narwhal`),
      backendPort: routerBackendPort(spec.router),
    };
    const kvPeers = spec.runtime.restartKvPeers ? kvPeerWiring(name, spec, args.secrets.engineApiKey, this) : undefined;
    const engines = this.discovery.plans.map(({ spec: e, plan }) => ({
      spec: e,
      engine: new Engine(
        `${name}-${e.id}`,
        {
          plan,
          hostAlias: e.host,
          servedName: spec.model.servedName,
          expectedVersion: hosts.get(e.host)!.discovery.runtime.apply(versionOf),
          connection: hosts.get(e.host)!.connection,
          engineApiKey: args.secrets.engineApiKey,
          runDir: `${stackDirOn(spec, e.host, args.stack)}/engines/${e.id}`,
          healthTimeoutS: spec.runtime.deadlinesS.start,
          stopTimeoutS: spec.runtime.deadlinesS.stop,
          runtime: spec.runtime,
          modelDir: spec.model.checkpointDir,
          stack: args.stack,
          runbookRun: e.runbookRun,
          kvPeers: kvPeers?.argsFor(e.id),
          // One docker provider per host (docker backend), named after the host's discovery.
          hostScope: { name: `${name}-${e.host}`, parent: this },
          knownHosts: args.knownHosts,
          router: engineRouter,
        },
        // Order only: a disagreement stops every start, but no value of the agreement reaches a plan.
        { parent: this, dependsOn: [hosts.get(e.host)!.discovery, this.replicas] },
      ),
    }));

    this.engineParts = engines;
    this.peerWaves = kvPeers?.connect(engines.map(({ spec: e, engine }) => ({ id: e.id, host: e.host, engine })), (host) => hosts.get(host)!.connection) ?? [];
    this.restartScopes = kvPeers?.scopes;
    this.routerHost = this.discovery.routerHost;
    this.hosts = this.discovery.summary;
    this.engines = pulumi.all(
      Object.fromEntries(
        engines.map(({ spec: e, engine }) => [
          e.id,
          pulumi
            .all([engine.url, engine.pid, engine.startedAt, engine.plan, engine.generation.generationDigest, engine.cache.cacheLayoutDigest, engine.runbook, engine.drain.lastDrain])
            .apply(([url, pid, startedAt, plan, generationDigest, cacheLayoutDigest, runbook, lastDrain]): EngineSummary => ({
              host: e.host,
              role: e.role,
              url,
              pid,
              startedAt,
              planSha256: plan.planSha256,
              gpuIds: [...plan.placement.gpuIds],
              generationDigest,
              cacheLayoutDigest,
              ...(runbook ? { runbook } : {}),
              ...(lastDrain ? { lastDrain } : {}),
            })),
        ]),
      ),
    );
    this.deploymentConfig = this.discovery.deploymentConfig;
    this.cacheGroups = pulumi
      .all(
        engines.map(({ spec: e, engine }) => {
          const d = hosts.get(e.host)!.discovery;
          return pulumi.all([d.runtime, d.model, d.accelerators, engine.plan, engine.cache.layout]).apply(([runtime, model, acc, plan, layout]) => ({
            id: e.id,
            index: e.index,
            runtime: runtime!,
            modelConfigSha256: model.configSha256,
            accelerator: acc.product,
            plan,
            transport: plan.placement.transport,
            layout,
          }));
        }),
      )
      .apply((facts) => cacheSummary(spec, facts));
    // Gate B on every host that runs Narwhal's code: the sidecars and the router wait on their host's install, nothing else does.
    this.narwhalInstalls = narwhalInstalls(name, { spec, stack: args.stack, routerHost: this.routerHost, connectionOf: (alias) => hosts.get(alias)!.connection }, this);
    this.fabric = new FabricMesh(`${name}-fabric`, { spec, stack: args.stack, hosts, engines, cacheGroups: this.cacheGroups }, { parent: this });
    this.attestation = new AttestationMesh(
      `${name}-attestation`,
      { spec, stack: args.stack, hosts, engines, installs: this.narwhalInstalls, replicas: this.replicas, after: [this.fabric.gate] },
      { parent: this },
    );
    this.profiles = new ProfileMesh(`${name}-profiles`, { spec, stack: args.stack, engines, attestations: this.attestation.attestations, engineApiKey: args.secrets.engineApiKey, routerHost: this.routerHost, routerConnection: hosts.get(this.routerHost)!.connection, adopt: args.localFiles.profileAdopt }, { parent: this });
    const hostOf = Object.fromEntries(spec.engines.map((e) => [e.id, e.host]));
    this.sanitisedFleetDocument = this.attestation.fleetDocument.apply((d) => sanitisedFleetDocument(d, hostOf));
    this.preflight = preflight(
      `${name}-preflight`,
      {
        spec,
        stack: args.stack,
        engines,
        attestations: this.attestation.attestations,
        profiles: this.profiles,
        fabricEdges: this.fabric.edges,
        fleetDocument: this.attestation.fleetDocument,
        engineApiKey: args.secrets.engineApiKey,
        routerHost: this.routerHost,
        routerConnection: hosts.get(this.routerHost)!.connection,
        pairs: spec.preflight.pairs,
        repeats: spec.preflight.repeats,
        schedule: spec.preflight.schedule,
        strict: spec.preflight.strict,
      },
      { parent: this },
    );
    if (spec.calibration.enabled) {
      this.calibration = calibration(
        `${name}-calibration`,
        {
          spec,
          stack: args.stack,
          engines,
          attestations: this.attestation.attestations,
          fleetDocument: this.attestation.fleetDocument,
          engineApiKey: args.secrets.engineApiKey,
          adopt: args.localFiles.calibrationAdopt,
          routerHost: this.routerHost,
          routerConnection: hosts.get(this.routerHost)!.connection,
          preflight: this.preflight,
        },
        { parent: this },
      );
    }
    const routerParts = hosts.get(this.routerHost)!;
    this.routerHostResources = new RouterHost(
      `${name}-router-host`,
      {
        spec,
        stack: args.stack,
        hostAlias: this.routerHost,
        install: this.narwhalInstalls.get(this.routerHost)!,
        engineEndpoints: pulumi.all(engines.map(({ spec: e, engine }) => engine.url.apply((url) => ({ iid: e.id, url, role: e.role })))),
        engineEvidence: pulumi.all([pulumi.all(engines.map(({ spec: e, engine }) => pulumi.all([engine.url, engine.generation.processStartTime]).apply(([url, processStartTime]) => ({ iid: e.id, url, processStartTime })))), this.attestation.engines]).apply(
          ([proved, attested]) => proved.map((p) => ({ ...p, attestationUrl: attested[p.iid].url, attestationDigest: attested[p.iid].attestationDigest })),
        ),
        connection: routerParts.connection,
        address: routerParts.discovery.fabricAddress,
        fleetHosts: spec.hosts.map((h) => {
          const parts = hosts.get(h.alias)!;
          return {
            alias: h.alias,
            connection: parts.connection,
            routerDir: `${stackDirOn(spec, h.alias, args.stack)}/router`,
            engineIds: spec.engines.filter((e) => e.host === h.alias).map((e) => e.id),
            addresses: [parts.discovery.fabricAddress, pulumi.output(parts.connection).apply((c) => c.host)],
          };
        }),
        fleetDocument: this.attestation.fleetDocument,
        // The profile store is already on the router host, where the document's profiles.path points; a new store restarts the router.
        profileStoreDigest: this.profiles.store.storeDigest,
        engineApiKey: args.secrets.engineApiKey,
        grafanaAdminPassword: args.secrets.grafanaAdminPassword,
        // Every required preflight gate passed against this document, these generations and profiles.
        after: this.preflight,
      },
      { parent: this },
    );
    this.trialPoints = capacityTrial(
      `${name}-trial`,
      { spec, stack: args.stack, engines, profiles: this.profiles, routerHost: this.routerHost, router: this.routerHostResources, connectionOf: (alias) => hosts.get(alias)!.connection },
      this,
    );
    // Recorded only once the router's record of its swap is: an up whose wave failed a gate, or whose engine
    // narwhal would not readmit, never resolves it, so the stack keeps the last successful up's record and
    // the next up takes the same wave again (lib/rollout/decide.ts).
    this.rollout = pulumi.all([this.discovery.rollout, this.routerHostResources.records.router.id]).apply(([decision]) => decision.record);
    this.registerOutputs({ hosts: this.hosts, engines: this.engines });
  }
}

/** The vLLM version discovery read from the host's runtime (native command or image). */
function versionOf(runtime: RuntimeIdentity | null): string {
  if (!runtime?.vllmVersion) throw new Error("discovery could not read the vLLM version of the engine runtime; see the discovery record");
  return runtime.vllmVersion;
}
