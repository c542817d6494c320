import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import type { ObservabilitySpec } from "../lib/config";
import { textDigest } from "../lib/router/serve";
import { envFile } from "../lib/shell";
import {
  dashboardProvisioning,
  datasourceProvisioning,
  engineTargets,
  fleetDashboard,
  grafanaStartScript,
  grafanaStopScript,
  prometheusConfig,
  prometheusStartScript,
  prometheusStopScript,
  routerTargets,
  rulesFile,
  writeFilesScript,
  type DocumentEngine,
  type PrometheusRunOptions,
} from "../lib/observability";

export interface MonitoringArgs {
  spec: ObservabilitySpec;
  connection: command.types.input.remote.ConnectionArgs;
  stack: string;
  /** The router host's alias: a port refusal names it. */
  hostAlias?: string;
  /** Folder on the router host for Prometheus and Grafana files. */
  dir: string;
  /** The engines to scrape, as the fleet document names them; known before any engine is measured. */
  engines: pulumi.Input<DocumentEngine[]>;
  /** The router as the router host reaches it (`http://127.0.0.1:8000`). */
  routerLocalUrl: string;
  grafanaAdminPassword?: pulumi.Input<string>;
  /** The router: monitoring starts once it serves. */
  after: pulumi.Input<pulumi.Resource>;
  startTimeoutS: number;
  stopTimeoutS: number;
}

/**
 * Prometheus scraping the router and every engine from file-based targets, with Narwhal's alert
 * rules, and Grafana provisioned with the Prometheus datasource and the fleet dashboard. Containers
 * (the runbook's images, host network) or, with `observability.runtime: native`, the host's own
 * Prometheus binary; Grafana then has its provisioning files written for the operator's install.
 */
export class Monitoring extends pulumi.ComponentResource {
  public readonly prometheusUrl: string;
  public readonly grafanaUrl?: string;
  public readonly configDigest: pulumi.Output<string>;

  constructor(name: string, args: MonitoringArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:observability:Monitoring", name, {}, opts);
    const { spec } = args;
    const promDir = `${args.dir}/prometheus`;
    const grafanaDir = `${args.dir}/grafana`;
    const localProm = `http://127.0.0.1:${spec.prometheusPort}`;
    const targets = new command.remote.Command(
      `${name}-targets`,
      {
        connection: args.connection,
        // Re-run on every change of the fleet's endpoints (not of what was measured against them);
        // Prometheus picks the files up by itself.
        create: pulumi.output(args.engines).apply((engines) =>
          writeFilesScript(promDir, {
            "engines.json": JSON.stringify(engineTargets({ engines }), null, 2),
            "router.json": JSON.stringify(routerTargets(args.routerLocalUrl), null, 2),
          }),
        ),
        addPreviousOutputInEnv: false,
        logging: "stderr",
      },
      { parent: this, dependsOn: [args.after] },
    );
    const files = {
      "prometheus.yml": JSON.stringify(prometheusConfig({ scrapeIntervalS: spec.scrapeIntervalS, configDir: promDir }), null, 2),
      "rules.yml": JSON.stringify(rulesFile(), null, 2),
    };
    const digest = textDigest(JSON.stringify(files));
    this.configDigest = pulumi.output(digest);
    const run: PrometheusRunOptions = {
      runtime: spec.runtime,
      dir: promDir,
      command: spec.prometheusCommand,
      image: spec.prometheusImage,
      containerName: `narwhal-${args.stack}-prometheus`,
      bindAddress: "0.0.0.0",
      port: spec.prometheusPort,
      localUrl: localProm,
      configDigest: digest,
      startTimeoutS: args.startTimeoutS,
      stopTimeoutS: args.stopTimeoutS,
      hostAlias: args.hostAlias,
    };
    const config = new command.remote.Command(
      `${name}-prometheus-config`,
      { connection: args.connection, create: writeFilesScript(promDir, files), addPreviousOutputInEnv: false, logging: "stderr" },
      { parent: this, dependsOn: [args.after] },
    );
    new command.remote.Command(
      `${name}-prometheus`,
      { connection: args.connection, create: prometheusStartScript(run), delete: prometheusStopScript(run), triggers: [digest], addPreviousOutputInEnv: false, logging: "stderr" },
      { parent: this, deleteBeforeReplace: true, dependsOn: [config, targets] },
    );
    this.prometheusUrl = localProm;

    const grafanaFiles = {
      "provisioning/datasources/narwhal.yml": JSON.stringify(datasourceProvisioning(localProm), null, 2),
      "provisioning/dashboards/narwhal.yml": JSON.stringify(dashboardProvisioning(`${grafanaDir}/dashboards`), null, 2),
      "dashboards/narwhal-fleet.json": JSON.stringify(fleetDashboard(), null, 2),
    };
    const grafanaConfig = new command.remote.Command(
      `${name}-grafana-files`,
      { connection: args.connection, create: writeFilesScript(grafanaDir, grafanaFiles), addPreviousOutputInEnv: false, logging: "stderr" },
      { parent: this, dependsOn: [args.after] },
    );
    if (spec.runtime === "container") {
      if (!args.grafanaAdminPassword) {
        throw new pulumi.ResourceError("config narwhal-fleet:grafanaAdminPassword is missing: set it with `pulumi config set --secret grafanaAdminPassword <password>`", this);
      }
      const grafanaDigest = textDigest(JSON.stringify(grafanaFiles));
      new command.remote.Command(
        `${name}-grafana`,
        {
          connection: args.connection,
          create: grafanaStartScript({ dir: grafanaDir, image: spec.grafanaImage, containerName: `narwhal-${args.stack}-grafana`, port: spec.grafanaPort, configDigest: grafanaDigest, startTimeoutS: args.startTimeoutS, hostAlias: args.hostAlias }),
          delete: grafanaStopScript({ dir: grafanaDir, containerName: `narwhal-${args.stack}-grafana` }),
          stdin: pulumi.secret(pulumi.output(args.grafanaAdminPassword).apply((p) => envFile({ GF_SECURITY_ADMIN_PASSWORD: p }))),
          triggers: [grafanaDigest],
          addPreviousOutputInEnv: false,
          logging: "stderr",
        },
        { parent: this, deleteBeforeReplace: true, dependsOn: [grafanaConfig] },
      );
      this.grafanaUrl = `http://127.0.0.1:${spec.grafanaPort}`;
    }
    this.registerOutputs({ configDigest: this.configDigest });
  }
}
