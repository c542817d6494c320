import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { OpaqueComponent } from "./opaque-component";
import type { ObservabilitySpec } from "../lib/config/types";
import { textDigest } from "../lib/router/serve";
import { envFile } from "../lib/shell";
import { Liveness } from "../dynamic-providers/liveness/resource";
import { FilesPresence } from "../dynamic-providers/files-presence/resource";
import { loginInputs, loginSecrets } from "./login-inputs";
import { dashboardProvisioning, datasourceProvisioning, fleetDashboard } from "../lib/observability/grafana";
import { engineTargets, routerTargets, type DocumentEngine } from "../lib/observability/targets";
import { FRESHNESS_EXPORTER_PY, type FreshnessExpectation, type FreshnessRunOptions } from "../lib/observability/freshness-exporter";
import { freshnessPortCheckScript, grafanaPortCheckScript, grafanaStartScript, grafanaStopScript, prometheusPortCheckScript, prometheusStartScript, prometheusStopScript, freshnessStartScript, freshnessStopScript, writeFilesScript, type PrometheusRunOptions } from "../lib/observability/scripts";
import { prometheusConfig, TARGET_FILES } from "../lib/observability/prometheus";
import { rulesFile } from "../lib/observability/rules";

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
  /** An address of the router host the program reaches: a refresh probes Prometheus and Grafana there. */
  address: pulumi.Input<string>;
  /** A refresh's health probe waits this long before it calls a service hung. */
  healthDeadlineS: number;
  /** What the live fleet must still match, for the evidence freshness exporter; rewritten after each converged up. */
  freshness: pulumi.Input<FreshnessExpectation>;
}

/**
 * Prometheus scraping the router, every engine and the evidence freshness exporter, with Narwhal's alert
 * rules and the stale-evidence rule, and Grafana provisioned with the Prometheus datasource and the fleet dashboard. Containers
 * (the runbook's images, host network) or, with `observability.runtime: native`, the host's own
 * Prometheus binary; Grafana then has its provisioning files written for the operator's install.
 */
export class Monitoring extends OpaqueComponent {
  public readonly prometheusUrl: string;
  public readonly grafanaUrl?: string;
  public readonly configDigest: pulumi.Output<string>;

  constructor(name: string, args: MonitoringArgs, opts?: pulumi.ComponentResourceOptions) {
    super("narwhal:observability:Monitoring", name, {}, opts);
    const { spec } = args;
    const promDir = `${args.dir}/prometheus`;
    const grafanaDir = `${args.dir}/grafana`;
    const localProm = `http://127.0.0.1:${spec.prometheusPort}`;
    // A refresh that finds Prometheus or Grafana down mints a new epoch, a trigger of its start: the same up starts it again.
    const livenessEpoch = (service: "prometheus" | "grafana" | "freshness", port: number) =>
      new Liveness(
        `${name}-${service}-liveness`,
        { service, name: service, hostAlias: args.hostAlias ?? "router", url: pulumi.output(args.address).apply((a) => `http://${a.includes(":") ? `[${a}]` : a}:${port}`), healthDeadlineS: args.healthDeadlineS },
        { parent: this },
      ).epoch;
    // Runs whenever a service is about to be replaced (its triggers): a port held by anything but that service
    // stops the run here, before the replacement stops the running service.
    const portCheck = (service: "prometheus" | "grafana" | "freshness", script: string, triggers: pulumi.Input<unknown>[], dependsOn: pulumi.Input<pulumi.Resource>[]) =>
      new command.remote.Command(`${name}-${service}-port-check`, { connection: args.connection, create: script, triggers, addPreviousOutputInEnv: false, logging: "stderr" }, { parent: this, dependsOn });
    const freshnessDir = `${args.dir}/freshness`;
    const files = {
      "prometheus.yml": JSON.stringify(prometheusConfig({ scrapeIntervalS: spec.scrapeIntervalS, configDir: promDir, freshnessTarget: `127.0.0.1:${spec.freshnessPort}` }), null, 2),
      "rules.yml": JSON.stringify(rulesFile(), null, 2),
    };
    const grafanaFiles = {
      "provisioning/datasources/narwhal.yml": JSON.stringify(datasourceProvisioning(localProm), null, 2),
      "provisioning/dashboards/narwhal.yml": JSON.stringify(dashboardProvisioning(`${grafanaDir}/dashboards`), null, 2),
      "dashboards/narwhal-fleet.json": JSON.stringify(fleetDashboard(), null, 2),
    };
    // Every file the commands below write: a refresh that finds one gone (a cleanup, a restored disk)
    // replaces this, and its new id (which holds its epoch) is a trigger of each of them, so the same up
    // writes them all again before Prometheus starts. The id, not the epoch output: a preview knows the id
    // of a resource it only updates (a new login), so that update forecasts no rewrite that up never does.
    const login = loginInputs(args.connection);
    const written = new FilesPresence(
      `${name}-files`,
      {
        hostAlias: args.hostAlias ?? "router",
        stack: args.stack,
        login: login.login,
        credentials: loginSecrets(login),
        owner: "monitoring",
        paths: [
          ...[...Object.keys(files), TARGET_FILES.engines, TARGET_FILES.router].map((f) => `${promDir}/${f}`),
          `${freshnessDir}/expected.json`,
          ...Object.keys(grafanaFiles).map((f) => `${grafanaDir}/${f}`),
        ],
        probeTimeoutS: args.healthDeadlineS,
      },
      { parent: this },
    ).id;
    const targets = new command.remote.Command(
      `${name}-targets`,
      {
        connection: args.connection,
        // Re-run on every change of the fleet's endpoints (not of what was measured against them);
        // Prometheus picks the files up by itself.
        create: pulumi.output(args.engines).apply((engines) =>
          writeFilesScript(promDir, {
            [TARGET_FILES.engines]: JSON.stringify(engineTargets({ engines }), null, 2),
            [TARGET_FILES.router]: JSON.stringify(routerTargets(args.routerLocalUrl), null, 2),
          }),
        ),
        triggers: [written],
        addPreviousOutputInEnv: false,
        logging: "stderr",
      },
      { parent: this, dependsOn: [args.after] },
    );
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
      { connection: args.connection, create: writeFilesScript(promDir, files), triggers: [written], addPreviousOutputInEnv: false, logging: "stderr" },
      { parent: this, dependsOn: [args.after] },
    );
    const prometheusTriggers = [digest, livenessEpoch("prometheus", spec.prometheusPort)];
    const prometheusPortCheck = portCheck("prometheus", prometheusPortCheckScript(run), prometheusTriggers, [config, targets]);
    new command.remote.Command(
      `${name}-prometheus`,
      { connection: args.connection, create: prometheusStartScript(run), delete: prometheusStopScript(run), triggers: prometheusTriggers, addPreviousOutputInEnv: false, logging: "stderr" },
      { parent: this, deleteBeforeReplace: true, dependsOn: [config, targets, prometheusPortCheck] },
    );
    this.prometheusUrl = localProm;

    // The freshness exporter reads expected.json at every scrape: written once the router serves what the
    // evidence was measured against, so a new expectation never needs a restart.
    const freshnessRun: FreshnessRunOptions = { dir: freshnessDir, port: spec.freshnessPort, startTimeoutS: args.startTimeoutS, stopTimeoutS: args.stopTimeoutS, hostAlias: args.hostAlias };
    const expected = new command.remote.Command(
      `${name}-freshness-expected`,
      {
        connection: args.connection,
        create: pulumi.output(args.freshness).apply((f) => writeFilesScript(freshnessRun.dir, { "expected.json": JSON.stringify(f, null, 2) })),
        triggers: [written],
        addPreviousOutputInEnv: false,
        logging: "stderr",
      },
      { parent: this, dependsOn: [args.after] },
    );
    // New exporter code replaces the running exporter: its start adopts only an exporter of the same code.
    const freshnessTriggers = [textDigest(FRESHNESS_EXPORTER_PY), livenessEpoch("freshness", spec.freshnessPort)];
    const freshnessPortCheck = portCheck("freshness", freshnessPortCheckScript(freshnessRun), freshnessTriggers, [expected]);
    new command.remote.Command(
      `${name}-freshness`,
      {
        connection: args.connection,
        create: freshnessStartScript(freshnessRun),
        delete: freshnessStopScript(freshnessRun),
        triggers: freshnessTriggers,
        addPreviousOutputInEnv: false,
        logging: "stderr",
      },
      { parent: this, deleteBeforeReplace: true, dependsOn: [expected, freshnessPortCheck] },
    );

    const grafanaConfig = new command.remote.Command(
      `${name}-grafana-files`,
      { connection: args.connection, create: writeFilesScript(grafanaDir, grafanaFiles), triggers: [written], addPreviousOutputInEnv: false, logging: "stderr" },
      { parent: this, dependsOn: [args.after] },
    );
    if (spec.runtime === "container") {
      if (!args.grafanaAdminPassword) {
        throw new pulumi.ResourceError("config narwhal-fleet:grafanaAdminPassword is missing: set it with `pulumi config set --secret grafanaAdminPassword <password>`", this);
      }
      const grafanaDigest = textDigest(JSON.stringify(grafanaFiles));
      const grafanaRun = { dir: grafanaDir, image: spec.grafanaImage, containerName: `narwhal-${args.stack}-grafana`, port: spec.grafanaPort, configDigest: grafanaDigest, startTimeoutS: args.startTimeoutS, hostAlias: args.hostAlias };
      const grafanaTriggers = [grafanaDigest, livenessEpoch("grafana", spec.grafanaPort)];
      const grafanaPortCheck = portCheck("grafana", grafanaPortCheckScript(grafanaRun), grafanaTriggers, [grafanaConfig]);
      new command.remote.Command(
        `${name}-grafana`,
        {
          connection: args.connection,
          create: grafanaStartScript(grafanaRun),
          delete: grafanaStopScript(grafanaRun),
          stdin: pulumi.secret(pulumi.output(args.grafanaAdminPassword).apply((p) => envFile({ GF_SECURITY_ADMIN_PASSWORD: p }))),
          triggers: grafanaTriggers,
          addPreviousOutputInEnv: false,
          logging: "stderr",
        },
        { parent: this, deleteBeforeReplace: true, dependsOn: [grafanaConfig, grafanaPortCheck] },
      );
      this.grafanaUrl = `http://127.0.0.1:${spec.grafanaPort}`;
    }
    this.registerOutputs({ configDigest: this.configDigest });
  }
}
