/**
 * `vllm serve` argument parsing, restricted to the flags the simulator models.
 *
 * Behaves like vLLM's FlexibleArgumentParser (argparse underneath): `--flag value` and `--flag=value`,
 * underscores accepted in flag names, `--no-<flag>` for boolean flags, and any unknown flag is a usage
 * error with exit status 2. A launch plan that passes a flag the simulator does not model therefore fails
 * loudly here instead of being silently ignored.
 */
import { ArgError } from "./errors";
import { KVTransferConfig, parseKvTransferConfig } from "./kv-transfer-config";

export type ModelDtype = "auto" | "half" | "float16" | "bfloat16" | "float" | "float32";
export type KvCacheDtype = "auto" | "fp8" | "fp8_e4m3" | "fp8_e5m2";

export interface EngineArgs {
  /** The model path exactly as given: vLLM reports it as the card's `root` and hashes it for NIXL. */
  model: string;
  servedModelNames: string[];
  /** null = all interfaces, like uvicorn with vLLM's default `--host None`. */
  host: string | null;
  port: number;
  tensorParallelSize: number;
  dtype: ModelDtype;
  kvCacheDtype: KvCacheDtype;
  blockSize: number;
  maxModelLen: number | null;
  /** null = vLLM's hardware-dependent default (see geometry.ts). */
  maxNumSeqs: number | null;
  maxNumBatchedTokens: number | null;
  gpuMemoryUtilization: number;
  enforceEager: boolean;
  enablePrefixCaching: boolean;
  trustRemoteCode: boolean;
  tokenizer: string | null;
  apiKey: string | null;
  kvTransferConfig: KVTransferConfig | null;
  /** null = vLLM decides (disabled when a KV connector is configured). */
  disableHybridKvCacheManager: boolean | null;
  enableForceIncludeUsage: boolean;
  enableServerLoadTracking: boolean;
  apiServerCount: number;
  seed: number | null;
  disableLogStats: boolean;
  enableLogRequests: boolean;
  uvicornLogLevel: string;
  /** --shutdown-timeout: 0 aborts in-flight work on SIGTERM; above 0, the seconds a draining stop may take. */
  shutdownTimeout: number;
}

type Kind = "int" | "float" | "str" | "strs" | "bool" | "choice" | "json";

interface FlagSpec {
  kind: Kind;
  key: keyof EngineArgs;
  choices?: readonly string[];
  /** argparse's human_readable_int: "32k" = 32000, "32K" = 32768 (vLLM accepts it for --max-model-len). */
  humanReadable?: boolean;
}

const FLAGS: Record<string, FlagSpec> = {
  "--model": { kind: "str", key: "model" },
  "--served-model-name": { kind: "strs", key: "servedModelNames" },
  "--host": { kind: "str", key: "host" },
  "--port": { kind: "int", key: "port" },
  "--tensor-parallel-size": { kind: "int", key: "tensorParallelSize" },
  "--dtype": { kind: "choice", key: "dtype", choices: ["auto", "half", "float16", "bfloat16", "float", "float32"] },
  "--kv-cache-dtype": { kind: "choice", key: "kvCacheDtype", choices: ["auto", "fp8", "fp8_e4m3", "fp8_e5m2"] },
  "--block-size": { kind: "int", key: "blockSize" },
  "--max-model-len": { kind: "int", key: "maxModelLen", humanReadable: true },
  "--max-num-seqs": { kind: "int", key: "maxNumSeqs" },
  "--max-num-batched-tokens": { kind: "int", key: "maxNumBatchedTokens", humanReadable: true },
  "--gpu-memory-utilization": { kind: "float", key: "gpuMemoryUtilization" },
  "--enforce-eager": { kind: "bool", key: "enforceEager" },
  "--enable-prefix-caching": { kind: "bool", key: "enablePrefixCaching" },
  "--trust-remote-code": { kind: "bool", key: "trustRemoteCode" },
  "--tokenizer": { kind: "str", key: "tokenizer" },
  "--api-key": { kind: "str", key: "apiKey" },
  "--kv-transfer-config": { kind: "json", key: "kvTransferConfig" },
  "--disable-hybrid-kv-cache-manager": { kind: "bool", key: "disableHybridKvCacheManager" },
  "--enable-force-include-usage": { kind: "bool", key: "enableForceIncludeUsage" },
  "--enable-server-load-tracking": { kind: "bool", key: "enableServerLoadTracking" },
  "--api-server-count": { kind: "int", key: "apiServerCount" },
  "--seed": { kind: "int", key: "seed" },
  "--disable-log-stats": { kind: "bool", key: "disableLogStats" },
  "--enable-log-requests": { kind: "bool", key: "enableLogRequests" },
  "--shutdown-timeout": { kind: "int", key: "shutdownTimeout" },
  "--uvicorn-log-level": {
    kind: "choice",
    key: "uvicornLogLevel",
    choices: ["critical", "error", "warning", "info", "debug", "trace"],
  },
};

const SHORT: Record<string, string> = { "-tp": "--tensor-parallel-size" };

function defaults(): Omit<EngineArgs, "model"> {
  return {
    servedModelNames: [],
    host: null,
    port: 8000,
    tensorParallelSize: 1,
    dtype: "auto",
    kvCacheDtype: "auto",
    blockSize: 16,
    maxModelLen: null,
    maxNumSeqs: null,
    maxNumBatchedTokens: null,
    gpuMemoryUtilization: 0.92,
    enforceEager: false,
    enablePrefixCaching: true,
    trustRemoteCode: false,
    tokenizer: null,
    apiKey: null,
    kvTransferConfig: null,
    disableHybridKvCacheManager: null,
    enableForceIncludeUsage: false,
    enableServerLoadTracking: false,
    apiServerCount: 1,
    seed: null,
    disableLogStats: false,
    enableLogRequests: false,
    uvicornLogLevel: "info",
    shutdownTimeout: 0,
  };
}

function parseIntValue(flag: string, value: string, humanReadable: boolean): number {
  const m = humanReadable ? /^(\d+)([kKmMgG]?)$/.exec(value) : /^[+-]?\d+$/.exec(value);
  if (!m) throw new ArgError(`argument ${flag}: invalid int value: '${value}'`);
  if (!humanReadable) return Number(value);
  const unit = m[2];
  const base = unit === unit.toLowerCase() ? 1000 : 1024;
  const power = { "": 0, k: 1, m: 2, g: 3 }[unit.toLowerCase() as "" | "k" | "m" | "g"];
  return Number(m[1]) * base ** power;
}

/** The flag table guarantees the value's type matches the field (int flags hold numbers, and so on). */
function assign(out: object, key: keyof EngineArgs, value: unknown): void {
  (out as Record<string, unknown>)[key] = value;
}

function looksLikeFlag(token: string): boolean {
  return token.startsWith("-") && !/^-\d/.test(token);
}

/**
 * Parses the arguments after `serve`. Throws ArgError for anything argparse would reject
 * (unknown flags, bad values, a missing model).
 */
export function parseServeArgs(argv: readonly string[]): EngineArgs {
  const out: Partial<EngineArgs> & Omit<EngineArgs, "model"> = defaults();
  const positionals: string[] = [];
  const unknown: string[] = [];
  let i = 0;
  while (i < argv.length) {
    const token = argv[i++];
    if (!looksLikeFlag(token)) {
      positionals.push(token);
      continue;
    }
    const eq = token.indexOf("=");
    const rawName = eq >= 0 ? token.slice(0, eq) : token;
    const inline = eq >= 0 ? token.slice(eq + 1) : undefined;
    // FlexibleArgumentParser rewrites --max_model_len to --max-model-len before argparse sees it.
    let name = rawName.startsWith("--") ? "--" + rawName.slice(2).replace(/_/g, "-") : (SHORT[rawName] ?? rawName);
    let negated = false;
    if (!(name in FLAGS) && name.startsWith("--no-") && FLAGS["--" + name.slice(5)]?.kind === "bool") {
      name = "--" + name.slice(5);
      negated = true;
    }
    const spec = FLAGS[name];
    if (!spec) {
      unknown.push(token);
      continue;
    }
    if (spec.kind === "bool") {
      if (inline !== undefined) throw new ArgError(`argument ${rawName}: ignored explicit argument '${inline}'`);
      assign(out, spec.key, !negated);
      continue;
    }
    if (spec.kind === "strs") {
      const values = inline !== undefined ? [inline] : [];
      while (inline === undefined && i < argv.length && !looksLikeFlag(argv[i])) values.push(argv[i++]);
      if (values.length === 0) throw new ArgError(`argument ${name}: expected at least one argument`);
      assign(out, spec.key, values);
      continue;
    }
    let value = inline;
    if (value === undefined) {
      if (i >= argv.length || looksLikeFlag(argv[i])) throw new ArgError(`argument ${name}: expected one argument`);
      value = argv[i++];
    }
    switch (spec.kind) {
      case "int":
        assign(out, spec.key, parseIntValue(name, value, spec.humanReadable === true));
        break;
      case "float": {
        const x = Number(value);
        if (value.trim() === "" || !Number.isFinite(x)) throw new ArgError(`argument ${name}: invalid float value: '${value}'`);
        assign(out, spec.key, x);
        break;
      }
      case "choice":
        if (!spec.choices?.includes(value)) {
          const allowed = (spec.choices ?? []).map((c) => `'${c}'`).join(", ");
          throw new ArgError(`argument ${name}: invalid choice: '${value}' (choose from ${allowed})`);
        }
        assign(out, spec.key, value);
        break;
      case "json":
        assign(out, spec.key, parseKvTransferConfig(value));
        break;
      default:
        assign(out, spec.key, value);
    }
  }
  if (positionals.length > 1) unknown.push(...positionals.slice(1));
  if (unknown.length > 0) throw new ArgError(`unrecognized arguments: ${unknown.join(" ")}`);
  const model = positionals[0] ?? out.model;
  if (!model) throw new ArgError("the following arguments are required: model_tag (or --model)");
  if (positionals[0] && out.model && out.model !== positionals[0]) {
    throw new ArgError(`With \`vllm serve\`, you should provide the model as a positional argument or in a config file instead of via the \`--model\` option. The --model option will be removed in a future version.`);
  }
  const args: EngineArgs = { ...out, model };
  validate(args);
  return args;
}

/** Range checks vLLM performs while building its configs (these exit 1 in vLLM, but are argument faults). */
function validate(a: EngineArgs): void {
  if (a.port < 0 || a.port > 65535) throw new ArgError(`argument --port: ${a.port} is not a valid port`);
  if (a.tensorParallelSize < 1) throw new ArgError(`argument --tensor-parallel-size: must be >= 1, got ${a.tensorParallelSize}`);
  if (a.blockSize < 1) throw new ArgError(`argument --block-size: must be >= 1, got ${a.blockSize}`);
  if (!(a.gpuMemoryUtilization > 0 && a.gpuMemoryUtilization <= 1)) {
    throw new ArgError(`argument --gpu-memory-utilization: must be in (0, 1], got ${a.gpuMemoryUtilization}`);
  }
  if (a.maxNumSeqs !== null && a.maxNumSeqs < 1) throw new ArgError(`argument --max-num-seqs: must be >= 1, got ${a.maxNumSeqs}`);
  if (a.maxModelLen !== null && a.maxModelLen < 1) throw new ArgError(`argument --max-model-len: must be >= 1, got ${a.maxModelLen}`);
  if (a.shutdownTimeout < 0) throw new ArgError(`argument --shutdown-timeout: must be >= 0, got ${a.shutdownTimeout}`);
  if (a.apiServerCount < 1) throw new ArgError(`argument --api-server-count: must be >= 1, got ${a.apiServerCount}`);
}

/** vLLM's "non-default args: {...}" startup line, with the API key masked and snake_case names. */
export function describeNonDefault(args: EngineArgs): string {
  const base: Record<string, unknown> = defaults();
  const repr = (v: unknown): string =>
    typeof v === "string" ? `'${v}'` : typeof v === "boolean" ? (v ? "True" : "False") : Array.isArray(v) ? `[${v.map(repr).join(", ")}]` : String(v);
  const parts = [`'model': '${args.model}'`];
  for (const [key, value] of Object.entries(args)) {
    if (key === "model" || JSON.stringify(value) === JSON.stringify(base[key])) continue;
    const name = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    const shown = key === "apiKey" ? "'<redacted>'" : key === "kvTransferConfig" ? `KVTransferConfig(${JSON.stringify((value as KVTransferConfig).raw)})` : repr(value);
    parts.push(`'${name}': ${shown}`);
  }
  return `{${parts.join(", ")}}`;
}
