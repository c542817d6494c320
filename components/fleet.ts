import * as pulumi from "@pulumi/pulumi";
import type { FleetSpec, HostSpec } from "../lib/config";
import { parseDestination } from "../lib/config/formats";
import { HostDiscovery } from "../dynamic-providers/host-discovery/resource";
import { Engine } from "./engine";
import type { FleetSecrets } from "./stack-config";
import type { LaunchInputs } from "../lib/launch/plan";
import { checkReplicaShapes, LaunchPolicyError, resolveEngineLaunch } from "../lib/launch/policy";

export interface FleetArgs {
  spec: FleetSpec;
  secrets: FleetSecrets;
  /** Names the per-stack folders on hosts, so two stacks never share an engine's run folder. */
  stack: string;
}

export interface HostSummary {
  hostname: string;
  hostKeyFingerprint: string;
  accelerator: { vendor: string; product: string | null; count: number };
  fabricAddress: string;
  factsDigest: string;
}

export interface EngineSummary {
  host: string;
  role: "prefill" | "decode";
  url: string;
  pid: number;
  startedAt: string;
  planSha256: string;
}

/** The whole fleet: one discovery per physical host, then its engines. */
export class Fleet extends pulumi.ComponentResource {
  public readonly hosts: pulumi.Output<Record<string, HostSummary>>;
  public readonly engines: pulumi.Output<Record<string, EngineSummary>>;
  public readonly routerHost: string;
  public readonly replicaCheck: pulumi.Output<string>;

  constructor(name: string, args: FleetArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:fleet:Fleet", name, {}, opts);
    const { spec, secrets } = args;

    const discoveries = new Map<string, HostDiscovery>();
    const connections = new Map<string, ReturnType<typeof connectionFor>>();
    for (const host of spec.hosts) {
      const login = { user: host.user, host: loginAddress(host.destination) };
      const discovery = new HostDiscovery(
        `${name}-${host.alias}`,
        {
          alias: host.alias,
          host: login.host,
          port: host.port,
          user: login.user,
          privateKey: host.auth === "key" ? secrets.sshPrivateKey(host.alias) : undefined,
          password: host.auth === "password" ? secrets.sshPassword(host.alias) : undefined,
          pinnedHostKey: host.hostKey,
          allowFirstContact: spec.ssh.allowFirstContact,
          connectTimeoutS: spec.ssh.connectTimeoutS,
          fabricInterface: host.fabricInterface,
          fabricAddressChoice: host.fabricAddress,
        },
        { parent: this },
      );
      discoveries.set(host.alias, discovery);
      connections.set(host.alias, connectionFor(host, login, discovery, secrets, spec));
    }

    const engines = spec.engines.map((e) => {
      const discovery = discoveries.get(e.host)!;
      const host = spec.hosts.find((h) => h.alias === e.host)!;
      // Each plan depends on its own host's discovery only, so a change elsewhere never touches it.
      const launch: pulumi.Output<LaunchInputs> = pulumi
        .all([discovery.fabricAddress, discovery.accelerators])
        .apply(([fabricAddress, accelerators]) =>
          resolveEngineLaunch(spec, e, {
            alias: host.alias,
            fabricInterface: host.fabricInterface,
            fabricAddress,
            vendor: accelerators.vendor,
            product: accelerators.product,
            gpus: accelerators.gpus,
            notice: accelerators.notice,
          }),
        );
      const engine = new Engine(
        `${name}-${e.id}`,
        {
          launch,
          role: e.role,
          hostAlias: e.host,
          connection: connections.get(e.host)!,
          engineApiKey: secrets.engineApiKey,
          runDir: `/var/lib/narwhal-fleet/${args.stack}/engines/${e.id}`,
          healthTimeoutS: spec.runtime.deadlinesS.start,
          stopTimeoutS: spec.runtime.deadlinesS.stop,
        },
        { parent: this, dependsOn: [discovery] },
      );
      return { spec: e, engine, launch, product: discovery.accelerators.apply((a) => a.product) };
    });

    // Runbook, Gate A: replicas share one accelerator product and TP shape. A fleet-wide check that
    // fails the deployment, kept out of every engine's inputs so one host's change touches no other plan.
    this.replicaCheck = pulumi
      .all(engines.map(({ spec: e, launch, product }) => pulumi.all([launch, product]).apply(([inputs, p]) => ({ engineIndex: e.index, inputs, product: p }))))
      .apply((launches) => {
        const issues = checkReplicaShapes(launches);
        if (issues.length > 0) throw new LaunchPolicyError(issues);
        return "replicas share one accelerator product and TP shape";
      });

    this.routerHost = spec.router.host ?? spec.engines[0]!.host;
    this.hosts = pulumi.all(
      Object.fromEntries(
        [...discoveries].map(([alias, d]) => [
          alias,
          pulumi.all([d.hostname, d.hostKeyFingerprint, d.accelerators, d.fabricAddress, d.factsDigest]).apply(
            ([hostname, hostKeyFingerprint, acc, fabricAddress, factsDigest]): HostSummary => ({
              hostname,
              hostKeyFingerprint,
              accelerator: { vendor: acc.vendor, product: acc.product, count: acc.gpus.length },
              fabricAddress,
              factsDigest,
            }),
          ),
        ]),
      ),
    );
    this.engines = pulumi.all(
      Object.fromEntries(
        engines.map(({ spec: e, engine }) => [
          e.id,
          pulumi.all([engine.url, engine.pid, engine.startedAt, engine.plan]).apply(
            ([url, pid, startedAt, plan]): EngineSummary => ({ host: e.host, role: e.role, url, pid, startedAt, planSha256: plan.planSha256 }),
          ),
        ]),
      ),
    );
    this.registerOutputs({ hosts: this.hosts, engines: this.engines, replicaCheck: this.replicaCheck });
  }
}

/** The address part of a destination the config schema has already validated. */
function loginAddress(destination: string): string {
  const parsed = parseDestination(destination, false);
  if (!parsed.ok) throw new Error(`hosts[].destination: ${parsed.problem}`);
  return parsed.value.host;
}

/** The connection every remote command on a host uses: the key discovery verified is pinned. */
function connectionFor(
  host: HostSpec,
  login: { user: string; host: string },
  discovery: HostDiscovery,
  secrets: FleetSecrets,
  spec: FleetSpec,
) {
  return {
    host: login.host,
    port: host.port,
    user: login.user,
    privateKey: host.auth === "key" ? secrets.sshPrivateKey(host.alias) : undefined,
    password: host.auth === "password" ? secrets.sshPassword(host.alias) : undefined,
    hostKey: discovery.hostKey,
    perDialTimeout: spec.ssh.connectTimeoutS,
  };
}
