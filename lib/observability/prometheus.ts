import { ENGINE_JOB, ROUTER_JOB } from "./rules";
import { FRESHNESS_JOB } from "./freshness-exporter";

/** The file-based target lists Prometheus reads from its config folder: the program writes them, a refresh looks for them. */
export const TARGET_FILES = { router: "router.json", engines: "engines.json" } as const;

export interface PrometheusConfigOptions {
  readonly scrapeIntervalS: number;
  /** Folder holding `router.json`, `engines.json` and `rules.yml`, as Prometheus sees it. */
  readonly configDir: string;
  /** `host:port` of the evidence freshness exporter, as Prometheus reaches it. */
  readonly freshnessTarget?: string;
}

/** prometheus.yml: the router and every engine from file-based targets, the freshness exporter, Narwhal's alert rules and ours. */
export function prometheusConfig(o: PrometheusConfigOptions): Record<string, unknown> {
  const interval = `${o.scrapeIntervalS}s`;
  return {
    global: { scrape_interval: interval, evaluation_interval: interval },
    rule_files: [`${o.configDir}/rules.yml`],
    scrape_configs: [
      { job_name: ROUTER_JOB, file_sd_configs: [{ files: [`${o.configDir}/${TARGET_FILES.router}`] }] },
      { job_name: ENGINE_JOB, file_sd_configs: [{ files: [`${o.configDir}/${TARGET_FILES.engines}`] }] },
      ...(o.freshnessTarget === undefined ? [] : [{ job_name: FRESHNESS_JOB, static_configs: [{ targets: [o.freshnessTarget] }] }]),
    ],
  };
}
