/**
 * The runbook's `config/fleet.json` (`narwhal.fleet`, nested schema) over what the `.env` gave: engine
 * ids, roles and pins, latency limits, the router's deadlines, and where the profile store and the
 * first-token calibration are. Engines
 * are matched to `.env` nodes by their `${NARWHAL_NODE_<n>_URL}` reference, else by equal URL, else in
 * order. What discovery and the image check derive afresh (hardware, engine contract) is reported, not
 * carried over.
 */
import type { Draft } from "./draft";
import type { EnvMapping } from "./env-map";
import { readHttpUrl } from "./values";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const TOP_LEVEL = new Set(["schema", "schema_version", "model", "hardware", "engines", "engine_contract", "slo", "controller", "serving", "engine", "recovery", "profiles"]);

/** fleet.json fields that set this program's deadlines: [section, field, slo key]. */
const DEADLINES = [
  ["serving", "request_timeout_s", "requestTimeoutS"],
  ["serving", "prefill_timeout_s", "prefillTimeoutS"],
  ["engine", "first_token_timeout_s", "firstTokenTimeoutS"],
  ["engine", "health_timeout_s", "healthTimeoutS"],
] as const;

const REASONS: Readonly<Record<string, string>> = {
  hardware: "discovery reads the accelerator product and count from every host and refuses replicas that differ",
  engine_contract: "this program derives the engine contract afresh from discovery and the image check; profiles are adopted by generation digest instead",
  controller: "the router's controller runs with narwhal's defaults; set them in the generated fleet document if you need others",
  recovery: "the router's recovery settings run with narwhal's defaults",
};

export interface FleetOptions {
  /** fleet.json as a label for messages (`fleet.json`). */
  readonly label: string;
  /** Where `profiles.path` points on this machine, when it could be found. */
  readonly resolveProfiles?: (path: string) => string | undefined;
  /** Where `engine.first_token_calibration_path` points on this machine, when the file could be found. */
  readonly resolveCalibration?: (path: string) => string | undefined;
}

function nodeFor(ref: unknown, env: EnvMapping, index: number): number | undefined {
  if (typeof ref === "string") {
    const m = /^\$\{NARWHAL_NODE_(\d+)_URL\}$/.exec(ref);
    if (m) return Number(m[1]);
    const u = readHttpUrl(ref);
    if (u.ok) {
      for (const [n, e] of env.urls) if (e.url && e.url.host === u.value.host && e.url.port === u.value.port) return n;
    }
  }
  return env.nodes[index]?.n;
}

export function mapFleet(doc: unknown, env: EnvMapping, d: Draft, opts: FleetOptions): void {
  const at = (field: string) => `${opts.label} ${field}`;
  if (!isObject(doc)) {
    d.problem(opts.label, "expected a JSON object (a narwhal.fleet document)");
    return;
  }
  if (doc.schema !== "narwhal.fleet") {
    d.problem(at("schema"), 'expected "narwhal.fleet" (the nested fleet schema the runbook writes); the flat 0.1.2 fleet.json is not read');
    return;
  }
  for (const key of Object.keys(doc)) {
    if (key.startsWith("_")) continue;
    if (!TOP_LEVEL.has(key)) d.skip(at(key), "not a narwhal.fleet field");
    else if (REASONS[key]) d.skip(at(key), REASONS[key]);
  }

  if (typeof doc.model === "string") {
    const envModel = d.get(["model", "servedName"]);
    if (envModel === undefined) d.set(["model", "servedName"], doc.model, at("model"));
    else if (envModel !== doc.model) d.problem(at("model"), `differs from NARWHAL_ENGINE_MODEL_NAME; the fleet serves one model name`);
  }

  // Engines: ids, roles and pins.
  const engines = Array.isArray(doc.engines) ? doc.engines : [];
  const matched = new Set<number>();
  engines.forEach((raw, k) => {
    const where = at(`engines[${k}]`);
    if (!isObject(raw) || typeof raw.iid !== "string") {
      d.problem(where, "expected an engine object with an iid");
      return;
    }
    const n = nodeFor(raw.url, env, k);
    const node = env.nodes.find((x) => x.n === n);
    if (!node || matched.has(node.n)) {
      d.problem(where, `engine ${raw.iid} has no NARWHAL_NODE_<n>_SSH in the .env to run on (matched by its url "\${NARWHAL_NODE_<n>_URL}", an equal NARWHAL_NODE_<n>_URL, or its position)`);
      return;
    }
    matched.add(node.n);
    d.set(["engines", node.index, "id"], raw.iid, `${where}.iid`);
    if (raw.role !== undefined) d.set(["engines", node.index, "role"], raw.role, `${where}.role`);
    if (raw.pin !== undefined) d.set(["engines", node.index, "pin"], raw.pin, `${where}.pin`);
    if (raw.shared_device !== undefined) d.skip(`${where}.shared_device`, "shared-device engines are not supported by this program; give each engine its own GPUs");
    // A literal URL the .env does not override says where the engine is reached.
    if (typeof raw.url === "string" && !raw.url.startsWith("${") && !env.urls.get(node.n)?.url) {
      const u = readHttpUrl(raw.url);
      if (!u.ok) d.problem(`${where}.url`, u.problem);
      else {
        if (d.get(["engines", node.index, "port"]) === undefined) d.set(["engines", node.index, "port"], u.value.port, `${where}.url`);
        const hostIndex = (d.config.hosts as Array<{ alias: string }>).findIndex((h) => h.alias === node.hostAlias);
        if (d.get(["hosts", hostIndex, "urlHost"]) === undefined && d.get(["hosts", hostIndex, "fabricAddress"]) !== u.value.host) d.set(["hosts", hostIndex, "urlHost"], u.value.host, `${where}.url`);
      }
    }
  });
  for (const node of env.nodes) {
    if (!matched.has(node.n) && engines.length > 0) d.problem(`NARWHAL_NODE_${node.n}_SSH`, `no engine in ${opts.label} runs on this node; every engine of the .env needs its fleet.json entry (its iid names its profile)`);
  }

  // Latency limits and deadlines: fleet.json holds the recalibrated values, so they win over the .env's initial ones.
  const slo = isObject(doc.slo) ? doc.slo : {};
  for (const [field, key] of [
    ["ttft_s", "ttftS"],
    ["tpot_s", "tpotS"],
  ] as const) {
    if (slo[field] === undefined) continue;
    const before = d.sourceOf(`slo.${key}`);
    if (before) d.skip(before, `superseded by ${at(`slo.${field}`)} (the limit recalibrated after profiling)`);
    d.set(["slo", key], slo[field], at(`slo.${field}`));
  }
  for (const [section, field, key] of DEADLINES) {
    const s = doc[section];
    if (isObject(s) && s[field] !== undefined) d.set(["slo", key], s[field], at(`${section}.${field}`));
  }
  for (const section of ["serving", "engine"] as const) {
    const s = doc[section];
    if (!isObject(s)) continue;
    for (const field of Object.keys(s)) {
      if (DEADLINES.some(([sec, f]) => sec === section && f === field)) continue;
      if (section === "engine" && field === "first_token_calibration_path") {
        mapCalibration(s[field], d, at(`engine.${field}`), opts);
        continue;
      }
      const reason =
        field === "engine_api_key_env"
            ? "the engine API key is the engineApiKey secret (from NARWHAL_ENGINE_API_KEY)"
            : "the router runs with narwhal's default for this setting";
      d.skip(at(`${section}.${field}`), reason);
    }
  }
  const hardware = isObject(doc.hardware) ? doc.hardware : {};
  if (typeof hardware.tensor_parallel === "number") {
    const tp = d.get(["launch", "tensorParallelSize"]);
    if (tp === undefined) d.set(["launch", "tensorParallelSize"], hardware.tensor_parallel, at("hardware.tensor_parallel"));
    else if (tp !== hardware.tensor_parallel) d.problem(at("hardware.tensor_parallel"), "differs from NARWHAL_TENSOR_PARALLEL_SIZE; the replicas run one TP shape");
  }

  // The profile store the runbook measured: adopted engine by engine when its rows bind the live engines.
  const profiles = isObject(doc.profiles) ? doc.profiles : {};
  if (typeof profiles.path === "string") {
    const local = opts.resolveProfiles?.(profiles.path);
    if (local) d.set(["profiling", "adoptStore"], local, at("profiles.path"));
    else d.skip(at("profiles.path"), `no store found at ${profiles.path} next to ${opts.label}; copy the store and its .samples.json here (or pass --profiles) to adopt it, else every engine is profiled afresh`);
  }
  for (const field of Object.keys(profiles)) {
    if (field !== "path") d.skip(at(`profiles.${field}`), "the router applies narwhal's default fit limits");
  }
}

/** The runbook's first-token calibration: adopted while every process it sampled still serves, else measured afresh. */
function mapCalibration(value: unknown, d: Draft, from: string, opts: FleetOptions): void {
  if (typeof value !== "string" || !value) return;
  const local = opts.resolveCalibration?.(value);
  if (!local) {
    d.skip(from, `no calibration found at ${value} next to ${opts.label}; copy it here (or pass --calibration) to adopt it, else enable calibration to measure the deadline afresh`);
    return;
  }
  d.set(["calibration", "enabled"], true, from);
  d.set(["calibration", "adopt", "path"], local, from);
}
