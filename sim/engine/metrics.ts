/**
 * /metrics in the Prometheus text format as vLLM's prometheus_client registry writes it: `vllm:` names
 * with `{engine="0",model_name="..."}` labels, counters with a `_total` sample, histograms with
 * `_bucket`/`_sum`/`_count`, floats printed the way the Python client prints them.
 */

/** prometheus_client's floatToGoString: 0 -> "0.0", 1.7e9 -> "1.7e+09", inf -> "+Inf". */
export function formatValue(x: number): string {
  if (x === Infinity) return "+Inf";
  if (x === -Infinity) return "-Inf";
  if (Number.isNaN(x)) return "NaN";
  // Python's repr(): "8192.0" for integral floats, exponent form below 1e-4 ("1e-05").
  let s: string;
  if (Number.isInteger(x) && Math.abs(x) < 1e16) s = x.toFixed(1);
  else if (x !== 0 && Math.abs(x) < 1e-4) s = x.toExponential().replace(/e([+-])(\d)$/, "e$10$2");
  else s = String(x);
  // Go switches to exponents sooner than Python; prometheus_client mimics Go for positive values.
  const dot = s.indexOf(".");
  if (x > 0 && dot > 6) {
    const mantissa = `${s[0]}.${s.slice(1, dot)}${s.slice(dot + 1)}`.replace(/[0.]+$/, "");
    return `${mantissa}e+0${dot - 1}`;
  }
  return s;
}

export type Labels = Record<string, string>;

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

interface Family {
  render(): string[];
}

/** A value read at scrape time. `type` "counter" is for totals kept elsewhere (process CPU seconds). */
export class Gauge implements Family {
  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly labels: Labels,
    private readonly read: () => number,
    private readonly type: "gauge" | "counter" = "gauge",
  ) {}

  render(): string[] {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`, `${this.name}${labelText(this.labels)} ${formatValue(this.read())}`];
  }
}

export class Counter implements Family {
  private readonly values = new Map<string, { labels: Labels; value: number }>();

  /** `name` without the `_total` suffix, as prometheus_client declares counter families. */
  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly labels: Labels,
  ) {
    this.values.set("", { labels, value: 0 });
  }

  inc(by = 1, extra?: Labels): void {
    const key = extra ? JSON.stringify(extra) : "";
    const entry = this.values.get(key) ?? { labels: { ...this.labels, ...extra }, value: 0 };
    entry.value += by;
    this.values.set(key, entry);
  }

  get value(): number {
    let total = 0;
    for (const v of this.values.values()) total += v.value;
    return total;
  }

  render(): string[] {
    const lines = [`# HELP ${this.name}_total ${this.help}`, `# TYPE ${this.name}_total counter`];
    for (const [key, v] of this.values) {
      if (key === "" && this.values.size > 1 && v.value === 0) continue;
      lines.push(`${this.name}_total${labelText(v.labels)} ${formatValue(v.value)}`);
    }
    return lines;
  }
}

export class Histogram implements Family {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly labels: Labels,
    private readonly buckets: readonly number[],
  ) {
    this.counts = buckets.map(() => 0);
  }

  observe(v: number): void {
    this.sum += v;
    this.count++;
    for (let i = 0; i < this.buckets.length; i++) if (v <= this.buckets[i]) this.counts[i]++;
  }

  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    this.buckets.forEach((b, i) => lines.push(`${this.name}_bucket${labelText({ ...this.labels, le: formatValue(b) })} ${formatValue(this.counts[i])}`));
    lines.push(`${this.name}_bucket${labelText({ ...this.labels, le: "+Inf" })} ${formatValue(this.count)}`);
    lines.push(`${this.name}_count${labelText(this.labels)} ${formatValue(this.count)}`);
    lines.push(`${this.name}_sum${labelText(this.labels)} ${formatValue(this.sum)}`);
    return lines;
  }
}

/** An info-style gauge: one sample with value 1.0 whose labels carry the data (vllm:cache_config_info). */
export class Info implements Family {
  constructor(
    private readonly name: string,
    private readonly help: string,
    private readonly labels: Labels,
  ) {}

  render(): string[] {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`, `${this.name}${labelText(this.labels)} 1.0`];
  }
}

export class Registry {
  private readonly families: Family[] = [];

  add<F extends Family>(family: F): F {
    this.families.push(family);
    return family;
  }

  render(): string {
    return this.families.flatMap((f) => f.render()).join("\n") + "\n";
  }
}

// Bucket boundaries from vllm/v1/metrics/loggers.py.
export const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
export const ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
export const E2E_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0];
export const NIXL_TIME_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0];
export const NIXL_BYTES_BUCKETS = [2 ** 20, 2 ** 22, 2 ** 24, 2 ** 26, 2 ** 28, 2 ** 30, 2 ** 32];
