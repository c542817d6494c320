import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import { OpaqueComponent } from "../opaque-component";
import type { FleetSpec } from "../../lib/config/types";
import type { NarwhalInstall } from "./install";
import { Router, type FleetHostForCheck } from "./router";
import { Monitoring } from "../observability";
import { localAddress, routerUrl } from "../../lib/router/serve";
import { routerBackendPort } from "../../lib/router/front";
import { stackDirOn } from "../../lib/fleet/state-dir";
import { CommandRecord } from "../../dynamic-providers/command-record/resource";
import { lastJsonLine } from "../../lib/json-line";
import type { DocumentEngine } from "../../lib/observability/targets";
import type { FreshnessExpectation } from "../../lib/observability/freshness-exporter";

export { NarwhalInstall } from "./install";
export { Router } from "./router";

export interface RouterHostArgs {
  spec: FleetSpec;
  stack: string;
  /** The router host's alias in `hosts`. */
  hostAlias: string;
  /** Gate B on this host: the install the router and its tools run from (the fleet makes one per host). */
  install: NarwhalInstall;
  connection: command.types.input.remote.ConnectionArgs;
  /** An address of the router host that clients reach. */
  address: pulumi.Input<string>;
  /** Every fleet host, for the one-controller check before the router starts. */
  fleetHosts?: readonly FleetHostForCheck[];
  fleetDocument: pulumi.Input<Record<string, unknown>>;
  /** Every engine's id, URL and role, for the scrape targets. */
  engineEndpoints: pulumi.Input<DocumentEngine[]>;
  /** Every engine's proved start and attestation, for the evidence freshness exporter. */
  engineEvidence: pulumi.Input<FreshnessExpectation["engines"]>;
  profileStore?: pulumi.Input<string>;
  /** The digest of the store Gate F wrote where the document's `profiles.path` points. */
  profileStoreDigest?: pulumi.Input<string>;
  engineApiKey: pulumi.Input<string>;
  grafanaAdminPassword?: pulumi.Input<string>;
  /** The last gate before the router (the profile store now, preflight once it exists). */
  after: pulumi.Input<pulumi.Resource>;
}

/** Gate G on the router host: the router from the host's narwhal install (Gate B), and monitoring beside it. */
export class RouterHost extends OpaqueComponent {
  public readonly install: NarwhalInstall;
  public readonly router: Router;
  public readonly monitoring?: Monitoring;
  /** The evidence record of Gate G's router start and proof (Gate B's is the install's own). */
  public readonly records: { router: CommandRecord };

  constructor(name: string, args: RouterHostArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:router:RouterHost", name, {}, opts);
    const { spec } = args;
    const base = stackDirOn(spec, args.hostAlias, args.stack);
    this.install = args.install;
    this.router = new Router(
      `${name}-router`,
      {
        connection: args.connection,
        hostAlias: args.hostAlias,
        install: this.install,
        fleetDocument: args.fleetDocument,
        profileStore: args.profileStore,
        profileStoreDigest: args.profileStoreDigest,
        engineApiKey: args.engineApiKey,
        after: args.after,
        runDir: `${base}/router`,
        bindAddress: spec.router.bindAddress,
        port: spec.router.port,
        backendPort: routerBackendPort(spec.router),
        address: args.address,
        model: spec.model.servedName,
        engineIds: spec.engines.map((e) => e.id),
        startTimeoutS: spec.router.startTimeoutS,
        stopTimeoutS: spec.runtime.deadlinesS.stop,
        healthDeadlineS: spec.runtime.deadlinesS.health,
        fleetHosts: args.fleetHosts,
      },
      { parent: this },
    );
    // Gate G as an evidence record: the scripts that ran, what they printed, what they established.
    const stepOf = (stepName: string, c: command.remote.Command) => pulumi.all([c.create, c.stdout]).apply(([script, stdout]) => ({ name: stepName, script: script ?? "", stdout }));
    this.records = {
      router: new CommandRecord(
        `${name}-router-record`,
        {
          stack: args.stack,
          kind: "router",
          hostAlias: args.hostAlias,
          steps: pulumi.all([stepOf("front", this.router.front), stepOf("start", this.router.process), stepOf("proof", this.router.proofCommand)]),
          observations: { front: this.router.front.stdout.apply((out) => lastJsonLine<{ pid: number; startedAt: string }>(out)), started: this.router.started, proof: this.router.proof },
        },
        { parent: this },
      ),
    };
    if (spec.observability.enabled) {
      this.monitoring = new Monitoring(
        `${name}-monitoring`,
        {
          spec: spec.observability,
          connection: args.connection,
          stack: args.stack,
          hostAlias: args.hostAlias,
          dir: `${base}/observability`,
          engines: args.engineEndpoints,
          routerLocalUrl: routerUrl(localAddress(spec.router.bindAddress).replace(/^\[|\]$/g, ""), spec.router.port),
          grafanaAdminPassword: args.grafanaAdminPassword,
          after: this.router.process,
          startTimeoutS: spec.router.startTimeoutS,
          stopTimeoutS: spec.runtime.deadlinesS.stop,
          address: args.address,
          healthDeadlineS: spec.runtime.deadlinesS.health,
          freshness: pulumi.all([this.router.identity, this.router.profileStorePath, args.engineEvidence]).apply(([routerIdentity, profileStorePath, engines]) => ({
            routerDir: `${base}/router`,
            routerIdentity,
            profileStorePath,
            engines,
          })),
        },
        { parent: this },
      );
    }
    this.registerOutputs({});
  }
}
