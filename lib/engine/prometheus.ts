/**
 * The Prometheus text exposition format as vLLM's `/metrics` writes it (prometheus_client): `# HELP` and
 * `# TYPE` comments, then one sample per line, `name{label="value",...} value [timestamp]`. Only what
 * Gate C reads is interpreted: the process identity, the cache config info labels and plain gauges.
 */
import { EngineError } from "./errors";

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;

function parseValue(text: string): number | undefined {
  if (text === "+Inf" || text === "Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return undefined;
  return Number(text);
}

/** Parses `{a="x",b="y"}` at the start of `rest`; returns the labels and what follows the brace. */
function parseLabels(rest: string, fail: (why: string) => never): { labels: Record<string, string>; after: string } {
  const labels: Record<string, string> = {};
  let i = 1; // past "{"
  for (;;) {
    while (rest[i] === " ") i++;
    if (rest[i] === "}") return { labels, after: rest.slice(i + 1) };
    const name = LABEL_NAME.exec(rest.slice(i));
    if (!name) fail("expected a label name");
    i += name[0].length;
    if (rest[i] !== "=" || rest[i + 1] !== '"') fail(`expected ="..." after label ${name[0]}`);
    i += 2;
    let value = "";
    for (;;) {
      const c = rest[i];
      if (c === undefined) fail(`unterminated value of label ${name[0]}`);
      if (c === '"') break;
      if (c === "\\") {
        const next = rest[i + 1];
        value += next === "n" ? "\n" : next === "\\" ? "\\" : next === '"' ? '"' : `\\${next ?? ""}`;
        i += 2;
      } else {
        value += c;
        i++;
      }
    }
    i++; // closing quote
    if (name[0] in labels) fail(`label ${name[0]} appears twice`);
    labels[name[0]] = value;
    while (rest[i] === " ") i++;
    if (rest[i] === ",") i++;
    else if (rest[i] !== "}") fail(`expected "," or "}" after label ${name[0]}`);
  }
}

/** Every sample in a `/metrics` body, in order. A malformed line throws `NARWHAL_METRICS_PARSE` naming it. */
export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  text.split("\n").forEach((raw, index) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const fail = (why: string): never => {
      throw new EngineError("NARWHAL_METRICS_PARSE", `/metrics line ${index + 1}: ${why}: ${JSON.stringify(line.slice(0, 120))}`);
    };
    const name = NAME.exec(line);
    if (!name) fail("expected a metric name");
    let rest = line.slice(name![0].length);
    let labels: Record<string, string> = {};
    if (rest.startsWith("{")) ({ labels, after: rest } = parseLabels(rest, fail));
    const fields = rest.trim().split(/\s+/);
    if (fields.length < 1 || fields.length > 2 || fields[0] === "") fail("expected a value and an optional timestamp");
    const value = parseValue(fields[0]);
    if (value === undefined) fail(`${JSON.stringify(fields[0])} is not a number`);
    samples.push({ name: name![0], labels, value: value! });
  });
  return samples;
}

/** The first sample of `name` whose labels include `match` (all of them), if any. */
export function findSample(samples: readonly Sample[], name: string, match: Readonly<Record<string, string>> = {}): Sample | undefined {
  return samples.find((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
}

/** A gauge's value, or undefined when the series is absent. */
export function gaugeValue(samples: readonly Sample[], name: string, match: Readonly<Record<string, string>> = {}): number | undefined {
  return findSample(samples, name, match)?.value;
}

/**
 * `process_start_time_seconds`: the live process's identity. prometheus_client's process collector has
 * it only with one API server (`--api-server-count > 1` runs multiprocess mode, which has no `process_*`).
 */
export function processStartTime(samples: readonly Sample[]): number | undefined {
  const v = gaugeValue(samples, "process_start_time_seconds");
  return v !== undefined && Number.isFinite(v) ? v : undefined;
}

/** The labels of `vllm:cache_config_info` (every CacheConfig field as `str()`), or undefined. */
export function cacheConfigInfo(samples: readonly Sample[]): Readonly<Record<string, string>> | undefined {
  return findSample(samples, "vllm:cache_config_info")?.labels;
}

/** KV cache usage (0-1): `vllm:kv_cache_usage_perc`, or the pre-0.9 `vllm:gpu_cache_usage_perc`. */
export function kvCacheUsage(samples: readonly Sample[], match: Readonly<Record<string, string>> = {}): number | undefined {
  return gaugeValue(samples, "vllm:kv_cache_usage_perc", match) ?? gaugeValue(samples, "vllm:gpu_cache_usage_perc", match);
}
