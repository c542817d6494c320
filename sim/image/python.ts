/**
 * `python3` in the engine-simulator image (build.ts puts it at /usr/local/bin/python3): the calls the
 * program makes of a vLLM image's Python, answered from the simulator's own model of vLLM.
 *
 *   python3 -m pip list --format json ...     discovery's package list
 *   python3 -c <importlib.metadata script>    discovery's fallback: the same list
 *   python3 -c <runtime check> <request>      the image check (lib/image-check/python.ts): one
 *                                             `NARWHAL_CHECK {...}` line per check, exit 1 if any failed
 *   python3 -c <urllib /health probe> <url>   the docker backend's container healthcheck
 *   python3 -m vllm.entrypoints.openai.api_server --model <dir> [flags]
 *                                             the runbook launcher's engine container command: the
 *                                             simulator, as `vllm serve` with the model as --model
 *
 * Any other call exits 2 and names itself, so a new use of the image's Python fails loudly instead of
 * passing unseen.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { loadSimConfig } from "../engine/config";
import { parseKvTransferConfig } from "../engine/kv-transfer-config";
import { IMAGE_SITE_PACKAGES } from "../engine/nixl-runtime";
import { Tokenizer } from "../engine/tokenizer";

/**
 * The image's site-packages: build.ts copies the simulated vllm package's files (sim/python/vllm) and the
 * distributions' metadata (sim/python/*.dist-info) there, where a vLLM image's Python keeps them. Defined
 * beside the engine, which reads the NIXL version there too.
 */
export { IMAGE_SITE_PACKAGES };

/** vLLM 0.29's file declaring the NIXL connector's protocol version, under site-packages. */
export const NIXL_METADATA_PY = "vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py";

/** `Name` and `Version` of each `*.dist-info/METADATA` in the image's site-packages. */
function installedDistributions(site: string): Record<string, string> {
  if (!existsSync(site)) return {};
  const out: Record<string, string> = {};
  for (const entry of readdirSync(site).filter((e) => e.endsWith(".dist-info")).sort()) {
    const text = readFileSync(join(site, entry, "METADATA"), "utf8");
    const name = /^Name:\s*(\S+)/m.exec(text)?.[1];
    const version = /^Version:\s*(\S+)/m.exec(text)?.[1];
    if (name && version) out[name.toLowerCase()] = version;
  }
  return out;
}

/** The distributions the image holds, as importlib.metadata names them: vllm at the simulator's version, and those installed in site-packages. */
export function imagePackages(env: NodeJS.ProcessEnv, site = IMAGE_SITE_PACKAGES): Record<string, string> {
  return { ...installedDistributions(site), vllm: loadSimConfig(env).version };
}

/** The NIXL connector version as the runtime check reads it: the constant's assignment line in metadata.py. */
function nixlConnectorVersion(site: string): { version: number | null; source: string | null } {
  const file = join(site, NIXL_METADATA_PY);
  if (!existsSync(file)) return { version: null, source: null };
  const m = /^NIXL_CONNECTOR_VERSION\s*(?::\s*int\s*)?=\s*(\d+)/m.exec(readFileSync(file, "utf8"));
  return m && Number(m[1]) > 0 ? { version: Number(m[1]), source: file } : { version: null, source: null };
}

const NIXL_CONNECTOR_CLASS = "vllm.distributed.kv_transfer.kv_connector.v1.nixl_connector.NixlConnector";
const TOKENIZER_CLASS = "transformers.tokenization_utils_fast.PreTrainedTokenizerFast";

interface CheckRequest {
  pins: Record<string, string>;
  kvTransferConfig: Record<string, unknown>;
  trustRemoteCode: boolean;
  dsRequired: boolean;
  model: string;
  tokenizer: string;
}

type Json = Record<string, unknown>;

function readJson(path: string): Json | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  return JSON.parse(text) as Json;
}

/** Python's `TypeName: message` form of an error, as the real check's describe() prints it. */
function describe(err: unknown): string {
  const e = err as Error & { pyType?: string };
  const type = e.pyType ?? (err instanceof SyntaxError ? "JSONDecodeError" : (e as NodeJS.ErrnoException).code === "ENOENT" ? "FileNotFoundError" : "ValueError");
  return `${type}: ${e.message.split("\n").map((l) => l.trim()).filter(Boolean).join(" ")}`.slice(0, 1000);
}

/** Runs every check of the runtime check in order, printing one line each; returns the exit status. */
export function runtimeCheck(request: CheckRequest, env: NodeJS.ProcessEnv, print: (line: string) => void, site = IMAGE_SITE_PACKAGES): number {
  const results: boolean[] = [];
  const report = (check: string, ok: boolean, fields: Json = {}) => {
    results.push(ok);
    const sorted = Object.fromEntries(Object.entries({ check, ok, ...fields }).sort(([a], [b]) => (a < b ? -1 : 1)));
    print(`NARWHAL_CHECK ${JSON.stringify(sorted)}`);
  };
  const checks: Array<[string, () => void]> = [
    ["custom-code", () => {
      const config = readJson(join(request.model, "config.json"));
      if (config === null) throw Object.assign(new Error(`${request.model}/config.json does not exist`), { pyType: "FileNotFoundError" });
      const reasons: string[] = [];
      if ("auto_map" in config) reasons.push("config.json has auto_map");
      const text = config.text_config;
      if (text && typeof text === "object" && !Array.isArray(text) && "auto_map" in text) reasons.push("config.json has text_config.auto_map");
      if ("auto_map" in (readJson(join(request.tokenizer, "tokenizer_config.json")) ?? {})) reasons.push(`${request.tokenizer}/tokenizer_config.json has auto_map`);
      const trusted = Boolean(request.trustRemoteCode);
      report("custom-code", trusted || reasons.length === 0, { required: reasons.length > 0, trusted, reasons });
    }],
    ["packages", () => {
      const have = imagePackages(env, site);
      const observed = Object.fromEntries(Object.keys(request.pins).sort().map((name) => [name, have[name] ?? null]));
      const mismatches = Object.keys(observed)
        .filter((name) => observed[name] !== request.pins[name])
        .map((name) => ({ package: name, expected: request.pins[name], found: observed[name] }));
      report("packages", mismatches.length === 0, { observed, mismatches });
    }],
    ["vllm-api-version", () => {
      const version = imagePackages(env).vllm;
      report("vllm-api-version", version.trim() !== "", { version });
    }],
    ["connector", () => {
      parseKvTransferConfig(JSON.stringify(request.kvTransferConfig));
      report("connector", true, { name: request.kvTransferConfig.kv_connector, resolved: NIXL_CONNECTOR_CLASS });
    }],
    ["ds-layout", () => {
      if (!request.dsRequired) return report("ds-layout", true, { required: false });
      const layout = (env.VLLM_SSM_CONV_STATE_LAYOUT ?? "SD").toUpperCase();
      report("ds-layout", layout === "DS", { required: true, layout });
    }],
    ["tokenizer", () => {
      const vocab = Number(readJson(join(request.model, "config.json"))?.vocab_size ?? 32000);
      new Tokenizer(request.tokenizer, vocab, Boolean(request.trustRemoteCode));
      report("tokenizer", true, { path: request.tokenizer, loaded: TOKENIZER_CLASS });
    }],
    ["nixl-versions", () => {
      const connector = nixlConnectorVersion(site);
      const have = installedDistributions(site);
      const distribution = ["nixl", "nixl-rocm"].find((name) => have[name] !== undefined) ?? null;
      const nixlVersion = distribution ? have[distribution] : null;
      report("nixl-versions", connector.version !== null && nixlVersion !== null, {
        connectorVersion: connector.version,
        connectorSource: connector.source,
        searched: join(site, "vllm/distributed/kv_transfer/kv_connector/v1"),
        nixlVersion,
        nixlDistribution: distribution,
      });
    }],
  ];
  for (const [name, check] of checks) {
    try {
      check();
    } catch (err) {
      report(name, false, { error: describe(err) });
    }
  }
  return results.every(Boolean) ? 0 : 1;
}

const isPipList = (args: string[]) =>
  args[0] === "-m" && args[1] === "pip" && args[2] === "list" && args[args.indexOf("--format") + 1] === "json";

/** Dispatches one call; resolves with the exit status. */
export async function main(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const code = args[0] === "-c" ? (args[1] ?? "") : undefined;
  const list = () => JSON.stringify(Object.entries(imagePackages(env)).map(([name, version]) => ({ name, version })));
  if (isPipList(args) || (code !== undefined && /importlib\.metadata/.test(code) && /distributions\(\)/.test(code))) {
    console.log(list());
    return 0;
  }
  if (code !== undefined && code.includes("NARWHAL_CHECK") && args[2] !== undefined) {
    return runtimeCheck(JSON.parse(args[2]) as CheckRequest, env, (line) => console.log(line));
  }
  if (code !== undefined && /urllib\.request\.urlopen\(sys\.argv\[1\]/.test(code) && args[2] !== undefined) {
    try {
      const res = await fetch(args[2], { signal: AbortSignal.timeout(2000) });
      return res.ok ? 0 : 1;
    } catch (err) {
      console.error(`urllib.error.URLError: ${(err as Error).message}`);
      return 1;
    }
  }
  console.error(`python3 (engine-simulator image): unsupported call ${JSON.stringify(args.map((a) => (a.length > 80 ? `${a.slice(0, 77)}...` : a)))}`);
  return 2;
}

const API_SERVER_MODULE = "vllm.entrypoints.openai.api_server";

/** The image's `python3` entry point. */
export function run(): void {
  const args = process.argv.slice(2);
  if (args[0] === "-m" && args[1] === API_SERVER_MODULE) {
    // The simulator's entry point serves on load, reading process.argv as `vllm` does.
    process.argv = [process.argv[0], "vllm", "serve", ...args.slice(2)];
    require("../engine/main");
    return;
  }
  main(args, process.env).then(
    (status) => (process.exitCode = status),
    (err: Error) => {
      console.error(describe(err));
      process.exitCode = 1;
    },
  );
}
