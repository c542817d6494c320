/** Prometheus and Grafana beside the router (Gate G): targets, rules, configs, dashboard and run scripts. */
export { engineTargets, routerTargets, type DocumentEngine, type TargetGroup } from "./targets";
export { ALERT_RULES, ENGINE_JOB, ROUTER_JOB, rulesFile, type AlertRule } from "./rules";
export { prometheusConfig } from "./prometheus";
export { DASHBOARD_UID, DATASOURCE_UID, PANELS, dashboardProvisioning, datasourceProvisioning, fleetDashboard } from "./grafana";
export * from "./scripts";
export { FRESHNESS_EXPORTER_PY, FRESHNESS_JOB, FRESHNESS_METRIC, freshnessArgv, type FreshnessExpectation, type FreshnessRunOptions } from "./freshness-exporter";
