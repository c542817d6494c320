/**
 * PromQL and exposition helpers the tests use to check that every metric a dashboard panel or alert
 * reads is one the fleet exposes. Nothing in the program needs them, so they live with the tests.
 */
/**
 * The metric names a PromQL expression reads: identifiers that are neither functions, keywords nor
 * label names, with a histogram's `_bucket`/`_sum`/`_count` series named by their family.
 */
const NOT_METRICS = new Set([
  "sum", "rate", "increase", "irate", "histogram_quantile", "clamp_min", "clamp_max", "avg", "max", "min", "count", "by", "without", "on", "ignoring",
  "group_left", "group_right", "and", "or", "unless", "bool", "offset", "abs", "delta", "deriv", "topk", "bottomk", "le",
]);

export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values
    .replace(/(?<![A-Za-z0-9_:])\d+(?:\.\d+)?(?:e[-+]?\d+)?/gi, "0") // numbers, 1e-9 included
    .replace(/\{[^}]*\}/g, "") // label matchers
    .replace(/\[[^\]]*\]/g, "") // range selectors
    .replace(/\b(?:by|without|on|ignoring)\s*\([^)]*\)/g, ""); // grouping labels
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const id = m[0];
    const next = stripped.slice((m.index ?? 0) + id.length).trimStart();
    if (NOT_METRICS.has(id) || next.startsWith("(") || /^\d/.test(id)) continue;
    names.add(id);
  }
  return [...names].sort();
}

/** A series name's family: `narwhal_ttft_seconds_bucket` -> `narwhal_ttft_seconds`. */
export function metricFamily(name: string): string {
  return name.replace(/_(bucket|sum|count)$/, "");
}

/**
 * Metric names in a Prometheus text exposition: sample lines with their histogram families, and
 * families declared by `# TYPE` (a labelled family with no sample yet, such as per-engine ejections,
 * still exists).
 */
export function exposedMetrics(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split("\n")) {
    const declared = /^# TYPE ([A-Za-z_:][A-Za-z0-9_:]*) (\w+)/.exec(line);
    if (declared) {
      names.add(declared[1]);
      // A counter family `x` is sampled as `x_total` in the text format.
      if (declared[2] === "counter" && !declared[1].endsWith("_total")) names.add(`${declared[1]}_total`);
      continue;
    }
    if (line.startsWith("#") || line.trim() === "") continue;
    const m = /^[A-Za-z_:][A-Za-z0-9_:]*/.exec(line);
    if (m) {
      names.add(m[0]);
      names.add(metricFamily(m[0]));
    }
  }
  return names;
}
