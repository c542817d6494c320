import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import { OpaqueComponent } from "./opaque-component";
import type { EngineSpec, FleetSpec, HostSpec } from "../lib/config/types";
import { HostDiscovery } from "../dynamic-providers/host-discovery/resource";
import { ReplicaAgreement } from "../dynamic-providers/replica-agreement/resource";
import { DeploymentConfig } from "../dynamic-providers/deployment-config/resource";
import type { FleetSecrets } from "./fleet-inputs";
import type { LaunchPlan } from "../lib/launch/plan";
import { engineLaunchPlan } from "../lib/launch/policy";
import { hostDiscoveryPlan, resolveLogin, type HostDiscoveryPlan } from "../lib/fleet/host-plan";
import type { HostLogin } from "../lib/ssh/login";
import { storedJump } from "../lib/ssh/stored-login";
import type { SshConfig } from "../lib/ssh/ssh-config/resolve";
import { manifestIdentity } from "../lib/checkpoint/compare";
import { fleetDocument } from "../lib/fleet/fleet-document";
import { sidecarEndpoint } from "../lib/attestation/sidecar";
import { generatedConfig } from "../lib/fleet/generated-config";
import { decideRollout, type RecordedDeployment, type RolloutDecision } from "../lib/rollout/decide";

export interface DiscoveryArgs {
  spec: FleetSpec;
  secrets: FleetSecrets;
  stack: string;
  /** The operator's ssh_config, for destinations that are OpenSSH aliases. */
  sshConfig?: SshConfig;
  /** Per host alias, the key its ssh_config IdentityFile holds (read by the program's entry). */
  identityKeys: ReadonlyMap<string, pulumi.Output<string>>;
  /**
   * What the resources' names start with: `<prefix>-<alias>`, `<prefix>-replicas`, `<prefix>-config`,
   * the names they had when they sat directly under the Fleet, so existing state keeps them.
   */
  prefix: string;
  /** What the stack's last deployment recorded (entry/recorded-outputs.ts): a rolling change keeps engines on the settings it records. */
  recorded?: pulumi.Input<RecordedDeployment>;
}

/** One physical host after Gate A: how to log in, what discovery measured, and the connection every later command uses. */
export interface HostParts {
  login: HostLogin;
  /** The launch policy digest its discovery runs against (a rollout keeps the recorded one while it holds an engine of the host). */
  policyDigest: pulumi.Output<string>;
  discovery: HostDiscovery;
  connection: command.types.input.remote.ConnectionArgs;
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

/**
 * Gate A: discovery per physical host, one launch plan per engine from its own host's facts, the
 * replica agreement across hosts, and the generated configuration rendered from what was measured.
 */
export class Discovery extends OpaqueComponent {
  public readonly hosts: ReadonlyMap<string, HostParts>;
  /** Per engine in config order, its launch plan: rendered here once, from its own host's discovery, and handed to everything that needs it. */
  public readonly plans: ReadonlyArray<{ spec: EngineSpec; plan: pulumi.Output<LaunchPlan> }>;
  /** Which engines this up moves onto their new rolling settings and which keep the ones they run (lib/rollout). */
  public readonly rollout: pulumi.Output<RolloutDecision>;
  public readonly replicas: ReplicaAgreement;
  public readonly deploymentConfig: DeploymentConfig;
  /** The router's host: `router.host`, or the lowest-numbered engine's, as the runbook's discovery picks it. */
  public readonly routerHost: string;
  public readonly summary: pulumi.Output<Record<string, HostSummary>>;

  /** `opts.parent` is the Fleet these resources sat under before this component held them. */
  constructor(name: string, args: DiscoveryArgs, opts: pulumi.ComponentResourceOptions & { parent: pulumi.Resource }) {
    super("narwhal:discovery:Discovery", name, {}, opts);
    const { spec, prefix } = args;
    // Moved here from directly under the Fleet: the alias to their old URN keeps their state (and
    // evidence) instead of a delete and a create.
    const moved: pulumi.CustomResourceOptions = { parent: this, aliases: [{ parent: opts.parent }] };

    const hostPlans = new Map(spec.hosts.map((h) => [h.alias, hostDiscoveryPlan(spec, h)]));
    // Known at preview: it rests on the config and the recorded outputs only, never on a host.
    const configDigests = Object.fromEntries([...hostPlans].map(([alias, plan]) => [alias, plan.policyDigest]));
    this.rollout = pulumi.output(args.recorded ?? {}).apply((recorded) => decideRollout(spec, recorded, configDigests));
    this.hosts = new Map(
      spec.hosts.map((h) => [h.alias, discoverHost(`${prefix}-${h.alias}`, h, { ...hostPlans.get(h.alias)!, policyDigest: this.rollout.apply((r) => r.record.hosts[h.alias].policyDigest) }, args, moved)]),
    );
    this.plans = spec.engines.map((e) => ({ spec: e, plan: planFor(spec, e, this.hosts.get(e.host)!.discovery, this.rollout) }));
    this.replicas = agreeOnReplicas(`${prefix}-replicas`, spec, this.hosts, this.plans, args.stack, moved);
    this.routerHost = spec.router.host ?? spec.engines[0].host;
    this.deploymentConfig = writeDeploymentConfig(`${prefix}-config`, args, this, moved);
    this.summary = summariseHosts(this.hosts);
    this.registerOutputs({ hosts: this.summary });
  }
}

/** Discovery for one physical host, and the connection every later command on it uses. */
function discoverHost(
  name: string,
  host: HostSpec,
  plan: Omit<HostDiscoveryPlan, "policyDigest"> & { policyDigest: pulumi.Output<string> },
  args: DiscoveryArgs,
  opts: pulumi.CustomResourceOptions,
): HostParts {
  const { spec, secrets } = args;
  const login = resolveLogin(spec, host, args.sshConfig);
  const privateKey = host.auth === "key" ? (secrets.sshPrivateKey(host.alias) ?? args.identityKeys.get(host.alias)) : undefined;
  const password = host.auth === "password" ? secrets.sshPassword(host.alias) : undefined;
  const discovery = new HostDiscovery(
    name,
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
    opts,
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

/**
 * Each plan depends on its own host's discovery only (and on the rollout, which no host changes), so a
 * change elsewhere never touches it; the preview's forecast derives it with the same function from its
 * own probe (lib/adoption/preview-reads.ts).
 */
function planFor(spec: FleetSpec, e: EngineSpec, discovery: HostDiscovery, rollout: pulumi.Output<RolloutDecision>): pulumi.Output<LaunchPlan> {
  return pulumi.all([discovery.fabricAddress, discovery.accelerators, discovery.model, rollout]).apply(([fabricAddress, accelerators, model, { record }]) =>
    engineLaunchPlan(spec, e, { fabricAddress, accelerators, model }, record.engines[e.id].settings),
  );
}

/** Across hosts: one checkpoint snapshot, one accelerator product and one TP shape. */
function agreeOnReplicas(
  name: string,
  spec: FleetSpec,
  hosts: ReadonlyMap<string, HostParts>,
  plans: ReadonlyArray<{ spec: EngineSpec; plan: pulumi.Output<LaunchPlan> }>,
  stack: string,
  opts: pulumi.CustomResourceOptions,
): ReplicaAgreement {
  const engineHosts = [...new Set(spec.engines.map((e) => e.host))];
  return new ReplicaAgreement(
    name,
    {
      engines: pulumi.all(plans.map(({ spec: e, plan }) =>
        pulumi.all([plan, hosts.get(e.host)!.discovery.accelerators]).apply(([p, acc]) => ({
          engineIndex: e.index,
          id: e.id,
          host: e.host,
          product: acc.product,
          tensorParallelSize: p.tensorParallelSize,
        })),
      )),
      checkpoints: pulumi.all(engineHosts.map((alias) => hosts.get(alias)!.discovery.checkpoint.apply((m) => ({ host: alias, manifest: manifestIdentity(m) })))),
      stack,
    },
    opts,
  );
}

/** The generated configuration, rendered from what was measured, as private evidence files. */
function writeDeploymentConfig(name: string, args: DiscoveryArgs, gate: Discovery, opts: pulumi.CustomResourceOptions): DeploymentConfig {
  const { spec } = args;
  const generatedHosts = pulumi.all(
    [...gate.hosts].map(([alias, h]) =>
      pulumi.all([h.discovery.hostKey, h.discovery.fabricAddress, h.discovery.evidence, h.policyDigest]).apply(([hostKey, fabricAddress, discovery, policyDigest]) => ({
        alias,
        login: h.login,
        hostKey,
        fabricAddress,
        discovery,
        policyDigest,
      })),
    ),
  );
  // The same plans the engines run (Engine.plan).
  const plans = pulumi.all(gate.plans.map(({ plan }) => plan));
  const files = pulumi
    .all([generatedHosts, plans, gate.replicas.product, gate.replicas.tensorParallelSize])
    .apply(([generated, launchPlans, product, tp]) => {
      const endpoints = spec.engines.map((e) => {
        const url = launchPlans.find((p) => p.engineId === e.id)!.url;
        return { id: e.id, url, attestationUrl: sidecarEndpoint(url, e.attestationPort).url };
      });
      const document = fleetDocument(spec, endpoints, { accelerator: product ?? "none", acceleratorsPerEngine: tp, tensorParallel: tp }, { profilesPath: "runs/profiles.json" });
      return generatedConfig(spec, gate.routerHost, generated, launchPlans, document);
    });
  return new DeploymentConfig(name, { stack: args.stack, files }, opts);
}

function summariseHosts(hosts: ReadonlyMap<string, HostParts>): pulumi.Output<Record<string, HostSummary>> {
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
