import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { ALERT_RULES } from "../../../lib/observability/rules";
import { DATASOURCE_UID, PANELS, dashboardProvisioning, datasourceProvisioning, fleetDashboard } from "../../../lib/observability/grafana";
import { FRESHNESS_METRIC } from "../../../lib/observability/freshness-exporter";
import { engineTargets, routerTargets } from "../../../lib/observability/targets";
import { prometheusConfig } from "../../../lib/observability/prometheus";
import { metricNames } from "../../support/metrics";

const ROOT = path.resolve(__dirname, "..", "..", "..");
const NARWHAL = path.join(ROOT, ".tools", "venv", "lib", "python3.11", "site-packages", "narwhal");

/** Every `narwhal_*` name narwhal-inference 0.7.0's metric renderers write. */
function narwhalMetricNames(): Set<string> {
  const names = new Set<string>();
  const dir = path.join(NARWHAL, "observability", "metrics");
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".py"))) {
    for (const m of fs.readFileSync(path.join(dir, f), "utf8").matchAll(/"(narwhal_[a-z_]+)"/g)) names.add(m[1]);
  }
  return names;
}

/** The `vllm:` names the engine simulator exports, counters with the `_total` their samples carry. */
function simMetricNames(): Set<string> {
  const names = new Set<string>();
  const text = fs.readFileSync(path.join(ROOT, "sim", "engine", "vllm-metrics.ts"), "utf8");
  for (const m of text.matchAll(/new (Gauge|Counter|Histogram)\("(vllm:[a-z_:]+)"/g)) names.add(m[1] === "Counter" ? `${m[2]}_total` : m[2]);
  return names;
}

describe("observability: targets", () => {
  const document = {
    engines: [
      { iid: "e1", url: "http://198.18.0.11:8100", role: "prefill" },
      { iid: "e2", url: "http://[fd00::12]:8101/", role: "decode" },
    ],
  };

  it("one file_sd group per engine, its id as iid and its initial role, as narwhal's scrape_targets", () => {
    expect(engineTargets(document)).to.deep.equal([
      { targets: ["198.18.0.11:8100"], labels: { iid: "e1", role: "prefill", __scheme__: "http", __metrics_path__: "/metrics" } },
      { targets: ["[fd00::12]:8101"], labels: { iid: "e2", role: "decode", __scheme__: "http", __metrics_path__: "/metrics" } },
    ]);
  });

  it("the router is a target of its own", () => {
    expect(routerTargets("http://127.0.0.1:8000")).to.deep.equal([{ targets: ["127.0.0.1:8000"], labels: { __scheme__: "http", __metrics_path__: "/metrics" } }]);
  });

  it("names the engine whose URL is not a URL", () => {
    expect(() => engineTargets({ engines: [{ iid: "e1", url: "http://198.18.0.11:8100" }, { iid: "e2", url: "nope" }] })).to.throw('fleet document engines[1].url: "nope" is not a URL');
  });

  it("refuses a document without engines", () => {
    expect(() => engineTargets({})).to.throw("fleet document: engines is missing or empty; no scrape targets");
  });
});

describe("observability: rules and Prometheus config", () => {
  it("Narwhal's six alerts, on metrics narwhal-inference 0.7.0 exports, and the stale-evidence alert on the freshness exporter's", () => {
    expect(ALERT_RULES.map((r) => [r.alert, r.expr, r.for])).to.deep.equal([
      ["NarwhalEngineDown", 'up{job="engines"} == 0', "30s"],
      ["NarwhalEngineEjected", "narwhal_ejected_instances > 0", "1m"],
      ["NarwhalRouterDown", 'up{job="narwhal-router"} == 0', "2m"],
      ["NarwhalErrorBurst", "sum(rate(narwhal_failed_total[1m])) > 0.5", "5m"],
      ["NarwhalUnservedRising", "sum(rate(narwhal_unserved_total[1m])) > 0.2", "10m"],
      ["NarwhalPoolStarved", "narwhal_pool_instances < 1", "2m"],
      ["NarwhalEvidenceStale", "narwhal_evidence_fresh == 0", "0s"],
    ]);
    const known = new Set([...narwhalMetricNames(), FRESHNESS_METRIC, "up"]);
    expect(ALERT_RULES.flatMap((r) => metricNames(r.expr)).filter((m) => !known.has(m))).to.deep.equal([]);
  });

  it("scrapes the router job and the engines job from their target files, and the freshness exporter when it runs", () => {
    expect(prometheusConfig({ scrapeIntervalS: 5, configDir: "/srv/p" })).to.deep.equal({
      global: { scrape_interval: "5s", evaluation_interval: "5s" },
      rule_files: ["/srv/p/rules.yml"],
      scrape_configs: [
        { job_name: "narwhal-router", file_sd_configs: [{ files: ["/srv/p/router.json"] }] },
        { job_name: "engines", file_sd_configs: [{ files: ["/srv/p/engines.json"] }] },
      ],
    });
    expect(prometheusConfig({ scrapeIntervalS: 5, configDir: "/srv/p", freshnessTarget: "127.0.0.1:9839" }).scrape_configs).to.deep.include({
      job_name: "narwhal-evidence",
      static_configs: [{ targets: ["127.0.0.1:9839"] }],
    });
  });
});

describe("observability: metric names in PromQL", () => {
  const cases: Array<[string, string[]]> = [
    ['up{job="engines"} == 0', ["up"]],
    ["histogram_quantile(0.95, sum by (le) (rate(narwhal_ttft_seconds_bucket[5m])))", ["narwhal_ttft_seconds_bucket"]],
    ["sum(rate(narwhal_slo_met_total[5m])) / clamp_min(sum(rate(narwhal_served_total[5m])), 1e-9)", ["narwhal_served_total", "narwhal_slo_met_total"]],
    ["sum by (iid) (rate(vllm:generation_tokens_total[1m]))", ["vllm:generation_tokens_total"]],
    ['narwhal_slo_seconds{metric="ttft"}', ["narwhal_slo_seconds"]],
  ];
  for (const [expr, names] of cases) {
    it(expr, () => expect(metricNames(expr)).to.deep.equal(names));
  }
});

describe("observability: Grafana provisioning", () => {
  const dashboard = fleetDashboard() as { uid: string; schemaVersion: number; panels: Array<Record<string, any>> };

  it("provisions one Prometheus datasource by uid and a file provider for the dashboards folder", () => {
    expect(datasourceProvisioning("http://127.0.0.1:9090")).to.deep.equal({
      apiVersion: 1,
      datasources: [{ name: "Prometheus", type: "prometheus", uid: DATASOURCE_UID, access: "proxy", url: "http://127.0.0.1:9090", isDefault: true, editable: false }],
    });
    const providers = (dashboardProvisioning("/srv/g/dashboards") as { providers: Array<Record<string, any>> }).providers;
    expect(providers).to.have.length(1);
    expect(providers[0]).to.deep.include({ type: "file", options: { path: "/srv/g/dashboards" } });
  });

  it("a dashboard Grafana's schema accepts: unique panel ids, grid positions inside 24 columns, refIds, datasource by the provisioned uid", () => {
    expect(dashboard.uid).to.equal("narwhal-router");
    expect(dashboard.schemaVersion).to.be.a("number");
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).to.equal(ids.length);
    for (const p of dashboard.panels) {
      expect(["timeseries", "stat"]).to.include(p.type);
      expect(p.gridPos.x + p.gridPos.w).to.be.at.most(24);
      expect(p.datasource).to.deep.equal({ type: "prometheus", uid: DATASOURCE_UID });
      const refIds = p.targets.map((t: { refId: string }) => t.refId);
      expect(new Set(refIds).size, p.title).to.equal(refIds.length);
      for (const t of p.targets) expect(t.datasource.uid).to.equal(DATASOURCE_UID);
    }
  });

  it("shows pool loads, SLO, ejections, throughput, flips, TTFT/TPOT quantiles and per-engine KV usage", () => {
    const exprs = PANELS.flatMap((p) => p.queries.map((q) => q.expr)).join("\n");
    for (const m of ["narwhal_pool_load", "narwhal_slo_seconds", "narwhal_ejected_instances", "narwhal_served_total", "narwhal_flips_total", "narwhal_ttft_seconds_bucket", "narwhal_tpot_seconds_bucket", "vllm:kv_cache_usage_perc"]) {
      expect(exprs).to.contain(m);
    }
  });

  it("queries only metrics narwhal-serve, the engines or the freshness exporter export", () => {
    const known = new Set([...narwhalMetricNames(), ...simMetricNames(), FRESHNESS_METRIC, "up"]);
    const family = (m: string) => m.replace(/_bucket$/, "");
    const used = PANELS.flatMap((p) => p.queries.flatMap((q) => metricNames(q.expr)));
    expect(used.filter((m) => !known.has(m) && !known.has(family(m)))).to.deep.equal([]);
  });
});
