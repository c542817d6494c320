/**
 * Grafana provisioning: the Prometheus datasource, a file dashboard provider and the fleet dashboard
 * (uid `narwhal-router`, as Narwhal's own board): pool loads against the SLO, ejections, throughput,
 * role flips, TTFT/TPOT quantiles and per-engine KV usage. Every query names only metrics narwhal-serve
 * or the engines export; the tests check that against live scrapes.
 */
import type { Dashboard, Panel } from "@grafana/schema";

export const DATASOURCE_UID = "narwhal-prometheus";
export const DASHBOARD_UID = "narwhal-router";

export function datasourceProvisioning(prometheusUrl: string): Record<string, unknown> {
  return {
    apiVersion: 1,
    datasources: [{ name: "Prometheus", type: "prometheus", uid: DATASOURCE_UID, access: "proxy", url: prometheusUrl, isDefault: true, editable: false }],
  };
}

export function dashboardProvisioning(dashboardsDir: string): Record<string, unknown> {
  return {
    apiVersion: 1,
    providers: [{ name: "narwhal", orgId: 1, folder: "Narwhal", type: "file", disableDeletion: true, allowUiUpdates: false, options: { path: dashboardsDir } }],
  };
}

interface PanelSpec {
  title: string;
  type: "timeseries" | "stat";
  unit?: string;
  queries: Array<{ expr: string; legend: string }>;
}

const q = (expr: string, legend: string) => ({ expr, legend });
const quantiles = (metric: string) =>
  [0.5, 0.95, 0.99].map((p) => q(`histogram_quantile(${p}, sum by (le) (rate(${metric}_bucket[5m])))`, `p${Math.round(p * 100)}`));

export const PANELS: readonly PanelSpec[] = [
  { title: "Pool load by role", type: "timeseries", queries: [q("narwhal_pool_load", "{{role}} load"), q("narwhal_pool_instances", "{{role}} engines")] },
  {
    title: "Projected SLO ratio",
    type: "timeseries",
    unit: "percentunit",
    queries: [q("narwhal_controller_projected_slo_ratio", "projected"), q("sum(rate(narwhal_slo_met_total[5m])) / clamp_min(sum(rate(narwhal_served_total[5m])), 1e-9)", "met")],
  },
  { title: "Ejected engines", type: "stat", queries: [q("narwhal_ejected_instances", "ejected"), q("sum(increase(narwhal_engine_ejections_total[1h]))", "ejections 1h")] },
  {
    title: "Throughput",
    type: "timeseries",
    unit: "reqps",
    queries: [q("sum(rate(narwhal_served_total[1m]))", "served"), q("sum(rate(narwhal_failed_total[1m]))", "failed"), q("sum(rate(narwhal_unserved_total[1m]))", "unserved")],
  },
  { title: "Generated tokens per engine", type: "timeseries", queries: [q("sum by (iid) (rate(vllm:generation_tokens_total[1m]))", "{{iid}}")] },
  { title: "Role flips", type: "timeseries", queries: [q("sum by (to) (rate(narwhal_flips_total[5m]))", "to {{to}}"), q("rate(narwhal_flip_reversals_total[5m])", "reversals")] },
  { title: "TTFT quantiles", type: "timeseries", unit: "s", queries: [...quantiles("narwhal_ttft_seconds"), q('narwhal_slo_seconds{metric="ttft"}', "SLO")] },
  { title: "TPOT quantiles", type: "timeseries", unit: "s", queries: [...quantiles("narwhal_tpot_seconds"), q('narwhal_slo_seconds{metric="tpot"}', "SLO")] },
  { title: "KV cache usage per engine", type: "timeseries", unit: "percentunit", queries: [q("vllm:kv_cache_usage_perc", "{{iid}}")] },
  { title: "Scrape health", type: "stat", queries: [q("up", "{{job}} {{iid}}")] },
  // 1 while the live fleet matches its evidence (freshness-exporter.ts); a 0 names the engine and gate.
  { title: "Evidence still matching the live fleet", type: "stat", queries: [q("narwhal_evidence_fresh", "{{iid}} {{gate}}")] },
];

/**
 * The fleet dashboard in Grafana's dashboard JSON model. Typed as `@grafana/schema`'s Dashboard, so the
 * type check holds every field (and every field name, by the excess-property check) to Grafana's schema.
 */
export function fleetDashboard(): Dashboard {
  const datasource = { type: "prometheus", uid: DATASOURCE_UID };
  return {
    uid: DASHBOARD_UID,
    title: "Narwhal fleet",
    tags: ["narwhal"],
    timezone: "utc",
    schemaVersion: 39,
    version: 1,
    editable: false,
    refresh: "5s",
    time: { from: "now-1h", to: "now" },
    templating: { list: [] },
    annotations: { list: [] },
    panels: PANELS.map((p, i): Panel => ({
      id: i + 1,
      type: p.type,
      title: p.title,
      datasource,
      gridPos: { h: 8, w: 12, x: (i % 2) * 12, y: Math.floor(i / 2) * 8 },
      fieldConfig: { defaults: p.unit ? { unit: p.unit } : {}, overrides: [] },
      options: {},
      targets: p.queries.map((t, j) => ({ refId: String.fromCharCode(65 + j), datasource, expr: t.expr, legendFormat: t.legend })),
    })),
  };
}
