import * as fs from "node:fs";
import * as pulumi from "@pulumi/pulumi";
import { logAdoptionForecast } from "./adoption-forecast";
import type * as command from "@pulumi/command";
import type { EngineSpec, FleetSpec, HostSpec } from "../lib/config";
import { HostDiscovery } from "../dynamic-providers/host-discovery/resource";
import { ReplicaAgreement } from "../dynamic-providers/replica-agreement/resource";
import { kvPeerWiring } from "./peer-wave";
import type { PeerWave } from "../dynamic-providers/peer-wave/resource";
import { Engine } from "./engine";
import type { RunbookOutcome } from "./runtime";
import type { FleetSecrets } from "./stack-config";
import { renderLaunchPlan, type LaunchInputs } from "../lib/launch/plan";
import { hostLaunchFacts, resolveEngineLaunch } from "../lib/launch/policy";
import { hostDiscoveryPlan, resolveLogin } from "../lib/fleet/host-plan";
import type { HostLogin } from "../lib/ssh/login";
import { storedJump } from "../lib/ssh/stored-login";
import { identityFileMessage } from "../lib/config/local-files";
import type { SshConfig } from "../lib/ssh/ssh-config";
import { manifestIdentity } from "../lib/checkpoint/compare";
import { DeploymentConfig } from "../dynamic-providers/deployment-config/resource";
import { fleetDocument } from "../lib/fleet/fleet-document";
import { generatedConfig } from "../lib/fleet/generated-config";
import { cacheSummary, CacheGroupSummary } from "../lib/fleet/cache-summary";
import type { RuntimeIdentity } from "../lib/discovery/runtime";
import { FabricMesh } from "./fabric";
import { AttestationMesh } from "./attestation";
import { ProfileMesh } from "./profiles";
import { RouterHost } from "./router";
import { preflight } from "./preflight";
import type { Preflight } from "../dynamic-providers/preflight/resource";
import { calibration } from "./calibration";
import type { Calibration } from "../dynamic-providers/calibration/resource";
import { sanitisedFleetDocument } from "../lib/fleet/sanitised-document";
import { stackDirOn } from "../lib/fleet/state-dir";

export interface FleetArgs {
  spec: FleetSpec;
  secrets: FleetSecrets;
  /** Names the per-stack folders on hosts, so two stacks never share an engine's run folder. */
  stack: string;
  /** The operator's ssh_config, for destinations that are OpenSSH aliases. */
  sshConfig?: SshConfig;
}

export interface HostSummary {
  hostname: string;
  hostKeyFingerprint: string;
  accelerator: { vendor: string; product: string | null; count: number };
  fabricAddress: string;
  modelTreeSha256: string;
  factsDigest: string;
  evidence: { relativePath: string; digest: string };
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
}

interface HostParts {
  login: HostLogin;
  policyDigest: string;
  discovery: HostDiscovery;
  connection: command.types.input.remote.ConnectionArgs;
}

/**
 * The whole fleet, gate by gate: discovery per physical host (Gate A), one launch plan per engine from
 * its own host's facts, the replica agreement across hosts, then the engines (Gate C).
 */
export class Fleet extends pulumi.ComponentResource {
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
  /** Gates B and G: the narwhal install, the router and monitoring on the router host. */
  public readonly routerHostResources: RouterHost;
  /** The fleet document with every engine address replaced by its host alias. */
  public readonly sanitisedFleetDocument: pulumi.Output<Record<string, unknown>>;
  /** With `runtime.restartKvPeers`: one restart wave per KV component. */
  public readonly peerWaves: PeerWave[];
  /** Each engine's spec and resources, in config order (for stack outputs that list per-engine evidence). */
  public readonly engineParts: ReadonlyArray<{ spec: EngineSpec; engine: Engine }>;

  constructor(name: string, args: FleetArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:fleet:Fleet", name, {}, opts);
    const { spec } = args;

    const hosts = new Map(spec.hosts.map((h) => [h.alias, this.discoverHost(name, h, args)]));
    logAdoptionForecast(
      spec,
      spec.hosts.map((h) => {
        const { login, connection } = hosts.get(h.alias)!;
        return { spec: h, login, privateKey: connection.privateKey, password: connection.password };
      }),
      this,
    );
    const launches = spec.engines.map((e) => ({ spec: e, launch: launchFor(spec, e, hosts.get(e.host)!.discovery) }));
    this.replicas = this.agreeOnReplicas(name, spec, hosts, launches);
    const kvPeers = spec.runtime.restartKvPeers ? kvPeerWiring(name, spec, args.secrets.engineApiKey, this) : undefined;
    const engines = launches.map(({ spec: e, launch }) => ({
      spec: e,
      engine: new Engine(
        `${name}-${e.id}`,
        {
          launch,
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
        },
        // Order only: a disagreement stops every start, but no value of the agreement reaches a plan.
        { parent: this, dependsOn: [hosts.get(e.host)!.discovery, this.replicas] },
      ),
    }));

    this.engineParts = engines;
    this.peerWaves = kvPeers?.connect(engines.map(({ spec: e, engine }) => ({ id: e.id, host: e.host, engine })), (host) => hosts.get(host)!.connection) ?? [];
    this.routerHost = spec.router.host ?? spec.engines[0]!.host;
    this.hosts = summariseHosts(hosts);
    this.engines = pulumi.all(
      Object.fromEntries(
        engines.map(({ spec: e, engine }) => [
          e.id,
          pulumi
            .all([engine.url, engine.pid, engine.startedAt, engine.plan, engine.generation.generationDigest, engine.cache.cacheLayoutDigest, engine.runbook])
            .apply(([url, pid, startedAt, plan, generationDigest, cacheLayoutDigest, runbook]): EngineSummary => ({
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
            })),
        ]),
      ),
    );
    this.deploymentConfig = this.writeDeploymentConfig(name, args, hosts, engines);
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
    this.fabric = new FabricMesh(`${name}-fabric`, { spec, stack: args.stack, hosts, engines, cacheGroups: this.cacheGroups }, { parent: this });
    this.attestation = new AttestationMesh(`${name}-attestation`, { spec, stack: args.stack, hosts, engines, replicas: this.replicas, after: [this.fabric.gate] }, { parent: this });
    this.profiles = new ProfileMesh(`${name}-profiles`, { spec, stack: args.stack, engines, attestations: this.attestation.attestations, engineApiKey: args.secrets.engineApiKey, routerHost: this.routerHost, routerConnection: hosts.get(this.routerHost)!.connection }, { parent: this });
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
        engineEndpoints: pulumi.all(engines.map(({ spec: e, engine }) => engine.url.apply((url) => ({ iid: e.id, url, role: e.role })))),
        engineEvidence: pulumi.all([pulumi.all(engines.map(({ spec: e, engine }) => pulumi.all([engine.url, engine.generation.processStartTime]).apply(([url, processStartTime]) => ({ iid: e.id, url, processStartTime })))), this.attestation.engines]).apply(
          ([proved, attested]) => proved.map((p) => ({ ...p, attestationUrl: attested[p.iid]!.url, attestationDigest: attested[p.iid]!.attestationDigest })),
        ),
        connection: routerParts.connection,
        address: routerParts.discovery.fabricAddress,
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
    this.registerOutputs({ hosts: this.hosts, engines: this.engines });
  }

  /** Gate A's generated configuration, rendered from what was measured, as private evidence files. */
  private writeDeploymentConfig(name: string, args: FleetArgs, hosts: Map<string, HostParts>, engines: Array<{ spec: EngineSpec; engine: Engine }>): DeploymentConfig {
    const { spec } = args;
    const generatedHosts = pulumi.all(
      [...hosts].map(([alias, h]) =>
        pulumi.all([h.discovery.hostKey, h.discovery.fabricAddress, h.discovery.evidence]).apply(([hostKey, fabricAddress, discovery]) => ({
          alias,
          login: h.login,
          hostKey,
          fabricAddress,
          discovery,
          policyDigest: h.policyDigest,
        })),
      ),
    );
    const plans = pulumi.all(engines.map(({ engine }) => engine.plan));
    const files = pulumi
      .all([generatedHosts, plans, this.replicas.product, this.replicas.tensorParallelSize])
      .apply(([generated, launchPlans, product, tp]) => {
        const endpoints = spec.engines.map((e) => {
          const url = launchPlans.find((p) => p.engineId === e.id)!.url;
          return { id: e.id, url, attestationUrl: `${url.replace(/:\d+$/, `:${e.attestationPort}`)}/v1/attestation` };
        });
        const document = fleetDocument(spec, endpoints, { accelerator: product ?? "none", acceleratorsPerEngine: tp, tensorParallel: tp }, { profilesPath: "runs/profiles.json" });
        return generatedConfig(spec, this.routerHost, generated, launchPlans, document);
      });
    return new DeploymentConfig(`${name}-config`, { stack: args.stack, files }, { parent: this });
  }

  /** Gate A for one physical host, and the connection every later command on it uses. */
  private discoverHost(name: string, host: HostSpec, args: FleetArgs): HostParts {
    const { spec, secrets } = args;
    const login = resolveLogin(spec, host, args.sshConfig);
    const privateKey = host.auth === "key" ? (secrets.sshPrivateKey(host.alias) ?? identityFileKey(login, host.alias)) : undefined;
    const password = host.auth === "password" ? secrets.sshPassword(host.alias) : undefined;
    const plan = hostDiscoveryPlan(spec, host);
    const discovery = new HostDiscovery(
      `${name}-${host.alias}`,
      {
        // The login under the names discovery has always stored (see StoredLogin).
        alias: login.alias,
        host: login.host,
        port: login.port,
        user: login.user,
        jump: storedJump(login.jump),
        privateKey,
        password,
        pinnedHostKey: login.hostKey,
        allowFirstContact: spec.ssh.allowFirstContact,
        connectTimeoutS: login.connectTimeoutS,
        maxSessions: spec.ssh.maxSessionsPerHost,
        fabricInterface: host.fabricInterface,
        fabricAddressChoice: host.fabricAddress,
        stack: args.stack,
        stateDir: host.stateDir,
        retainOnDestroy: host.retainOnDestroy,
        ...plan,
      },
      { parent: this },
    );
    return {
      login,
      policyDigest: plan.policyDigest,
      discovery,
      connection: {
        host: login.host,
        port: login.port,
        user: login.user,
        privateKey,
        password,
        // The key discovery verified is pinned for every command that follows.
        hostKey: discovery.hostKey,
        perDialTimeout: login.connectTimeoutS,
        proxy: login.jump && { host: login.jump.host, port: login.jump.port, user: login.jump.user, privateKey, password, hostKey: login.jump.hostKey },
      },
    };
  }

  /** Gate A across hosts: one checkpoint snapshot, one accelerator product and one TP shape. */
  private agreeOnReplicas(name: string, spec: FleetSpec, hosts: Map<string, HostParts>, launches: Array<{ spec: EngineSpec; launch: pulumi.Output<LaunchInputs> }>): ReplicaAgreement {
    const engineHosts = [...new Set(spec.engines.map((e) => e.host))];
    return new ReplicaAgreement(
      `${name}-replicas`,
      {
        engines: pulumi.all(launches.map(({ spec: e, launch }) =>
          pulumi.all([launch, hosts.get(e.host)!.discovery.accelerators]).apply(([l, acc]) => ({
            engineIndex: e.index,
            id: e.id,
            host: e.host,
            product: acc.product,
            tensorParallelSize: renderLaunchPlan(l).tensorParallelSize,
          })),
        )),
        checkpoints: pulumi.all(engineHosts.map((alias) => hosts.get(alias)!.discovery.checkpoint.apply((m) => ({ host: alias, manifest: manifestIdentity(m) })))),
      },
      { parent: this },
    );
  }
}

/** Each plan depends on its own host's discovery only, so a change elsewhere never touches it. */
function launchFor(spec: FleetSpec, e: EngineSpec, discovery: HostDiscovery): pulumi.Output<LaunchInputs> {
  const host = spec.hosts.find((h) => h.alias === e.host)!;
  return pulumi.all([discovery.fabricAddress, discovery.accelerators, discovery.model]).apply(([fabricAddress, accelerators, model]) =>
    resolveEngineLaunch(spec, e, hostLaunchFacts(host, fabricAddress, accelerators, model)),
  );
}

/** The vLLM version discovery read from the host's runtime (native command or image). */
function versionOf(runtime: RuntimeIdentity | null): string {
  if (!runtime?.vllmVersion) throw new Error("discovery could not read the vLLM version of the engine runtime; see the discovery record");
  return runtime.vllmVersion;
}

/**
 * The IdentityFile an ssh_config alias names, read once and kept a Pulumi secret. One that exists but
 * cannot be read ends the run with a RunError (its message alone, see stack-config.ts).
 */
function identityFileKey(login: HostLogin, alias: string): pulumi.Output<string> | undefined {
  if (!login.identityFile || !fs.existsSync(login.identityFile)) return undefined;
  try {
    return pulumi.secret(fs.readFileSync(login.identityFile, "utf8"));
  } catch (err) {
    throw new pulumi.RunError(identityFileMessage(alias, login.identityFile, (err as NodeJS.ErrnoException).code));
  }
}

function summariseHosts(hosts: Map<string, HostParts>): pulumi.Output<Record<string, HostSummary>> {
  return pulumi.all(
    Object.fromEntries(
      [...hosts].map(([alias, { discovery: d }]) => [
        alias,
        pulumi.all([d.hostname, d.hostKeyFingerprint, d.accelerators, d.fabricAddress, d.checkpoint, d.factsDigest, d.evidence]).apply(
          ([hostname, hostKeyFingerprint, acc, fabricAddress, checkpoint, factsDigest, evidence]): HostSummary => ({
            hostname,
            hostKeyFingerprint,
            accelerator: { vendor: acc.vendor, product: acc.product, count: acc.gpus.length },
            fabricAddress,
            modelTreeSha256: checkpoint.modelTreeSha256,
            factsDigest,
            evidence,
          }),
        ),
      ]),
    ),
  );
}
