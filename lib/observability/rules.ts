/**
 * Alert rules equivalent to Narwhal's observability stack (runbook Gate G, `make observe`), on the
 * metric names narwhal-inference 0.7.0 exports (`narwhal_*`; 0.1.2's were `arrow_*`).
 */
export const ROUTER_JOB = "narwhal-router";
export const ENGINE_JOB = "engines";

export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for: string;
  readonly labels: { severity: "critical" | "warning" };
  readonly annotations: { summary: string };
}

export const ALERT_RULES: readonly AlertRule[] = [
  {
    alert: "NarwhalEngineDown",
    expr: `up{job="${ENGINE_JOB}"} == 0`,
    for: "30s",
    labels: { severity: "critical" },
    annotations: { summary: "Engine {{ $labels.iid }} does not answer its /metrics scrape" },
  },
  {
    alert: "NarwhalEngineEjected",
    expr: "narwhal_ejected_instances > 0",
    for: "1m",
    labels: { severity: "warning" },
    annotations: { summary: "The router has ejected {{ $value }} engine(s) from placement" },
  },
  {
    alert: "NarwhalRouterDown",
    expr: `up{job="${ROUTER_JOB}"} == 0`,
    for: "2m",
    labels: { severity: "critical" },
    annotations: { summary: "The Narwhal router does not answer its /metrics scrape" },
  },
  {
    alert: "NarwhalErrorBurst",
    expr: "sum(rate(narwhal_failed_total[1m])) > 0.5",
    for: "5m",
    labels: { severity: "critical" },
    annotations: { summary: "Requests fail at {{ $value }} per second through the router" },
  },
  {
    alert: "NarwhalUnservedRising",
    expr: "sum(rate(narwhal_unserved_total[1m])) > 0.2",
    for: "10m",
    labels: { severity: "warning" },
    annotations: { summary: "Requests go unserved at {{ $value }} per second" },
  },
  {
    alert: "NarwhalPoolStarved",
    expr: "narwhal_pool_instances < 1",
    for: "2m",
    labels: { severity: "critical" },
    annotations: { summary: "The {{ $labels.role }} pool has no engine" },
  },
  // Not Narwhal's: the evidence freshness exporter (freshness-exporter.ts). It fires at the first rule
  // evaluation after the scrape that saw the live fleet leave its evidence: within two scrape intervals.
  {
    alert: "NarwhalEvidenceStale",
    expr: "narwhal_evidence_fresh == 0",
    for: "0s",
    labels: { severity: "warning" },
    annotations: { summary: "The {{ $labels.gate }} evidence of {{ $labels.iid }} no longer matches the live fleet: run pulumi preview --refresh to see why, then pulumi up --refresh" },
  },
];

/** The rules file Prometheus loads (JSON is YAML, so no YAML writer is needed). */
export function rulesFile(): Record<string, unknown> {
  return { groups: [{ name: "narwhal", rules: ALERT_RULES }] };
}
