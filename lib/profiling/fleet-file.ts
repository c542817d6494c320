/**
 * What narwhal-profile reads of a fleet.json (the nested `narwhal.fleet` schema this program writes):
 * the model, each engine's id, URL, role and shared GPU group, the profile path and the API key's
 * variable. Whole-value `${NAME}` URLs are resolved from the environment as narwhal's loader does.
 * The full config rules are narwhal's own loader's job; this reads only what profiling uses.
 */
import { ProfileError } from "./errors";

export interface FleetEngine {
  iid: string;
  url: string;
  role: "prefill" | "decode";
  group?: string;
}

export interface ProfileFleet {
  model: string;
  engines: FleetEngine[];
  profilesPath: string;
  apiKeyEnv: string;
  hasContract: boolean;
  /** `profiles.max_decode_fit_mape` / `max_decode_cv_mape`: a profile above them is rejected. */
  maxDecodeFitMape: number;
  maxDecodeCvMape: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const bad = (msg: string) => new ProfileError("NARWHAL_PROFILE_STORE", msg);

function endpoint(field: string, value: unknown, env: NodeJS.ProcessEnv): string {
  if (typeof value !== "string" || !value) throw bad(`${field} must be a non-empty string`);
  if (!value.includes("${")) return value.replace(/\/$/, "");
  const m = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(value);
  if (!m) throw bad(`${field} requires a whole-value \${VARIABLE} reference`);
  const resolved = env[m[1]] ?? "";
  if (!resolved) throw bad(`${field}: environment variable ${m[1]} is unset or empty`);
  return resolved.replace(/\/$/, "");
}

export function readFleet(document: unknown, env: NodeJS.ProcessEnv = process.env): ProfileFleet {
  if (!isObject(document) || document.schema !== "narwhal.fleet") throw bad('fleet: expected a "narwhal.fleet" document');
  if (typeof document.model !== "string" || !document.model) throw bad("fleet: model must be a non-empty string");
  if (!Array.isArray(document.engines) || !document.engines.length) throw bad("fleet: engines must be a non-empty list");
  const seen = new Set<string>();
  const engines = document.engines.map((raw, k): FleetEngine => {
    if (!isObject(raw) || typeof raw.iid !== "string" || !raw.iid) throw bad(`engines[${k}].iid must be a non-empty string`);
    if (seen.has(raw.iid)) throw bad(`engines[${k}].iid ${raw.iid} is not unique`);
    seen.add(raw.iid);
    const role = raw.role ?? "decode";
    if (role !== "prefill" && role !== "decode") throw bad(`engines[${k}].role must be prefill or decode`);
    const shared = raw.shared_device;
    const group = isObject(shared) && typeof shared.group === "string" && shared.group ? shared.group : undefined;
    return { iid: raw.iid, url: endpoint(`engines[${k}].url`, raw.url, env), role, ...(group ? { group } : {}) };
  });
  const profiles = isObject(document.profiles) ? document.profiles : {};
  const engine = isObject(document.engine) ? document.engine : {};
  return {
    model: document.model,
    engines,
    profilesPath: typeof profiles.path === "string" && profiles.path ? profiles.path : "runs/profiles.json",
    apiKeyEnv: typeof engine.engine_api_key_env === "string" ? engine.engine_api_key_env : "",
    hasContract: document.engine_contract !== undefined && document.engine_contract !== null,
    maxDecodeFitMape: typeof profiles.max_decode_fit_mape === "number" ? profiles.max_decode_fit_mape : 0.05,
    maxDecodeCvMape: typeof profiles.max_decode_cv_mape === "number" ? profiles.max_decode_cv_mape : 0.13,
  };
}

/** `--only`: the selected engines in fleet order; zero matches is the contract's stop. */
export function selectEngines(engines: readonly FleetEngine[], only: readonly string[]): FleetEngine[] {
  const chosen = engines.filter((e) => !only.length || only.includes(e.iid));
  if (!chosen.length) throw new ProfileError("NARWHAL_PROFILE_SELECTION", "no matching instances");
  return chosen;
}

/** The other engines of `target`'s shared GPU group, which `--colocated` loads. */
export function neighboursOf(target: FleetEngine, engines: readonly FleetEngine[]): FleetEngine[] {
  if (!target.group) throw new ProfileError("NARWHAL_PROFILE_SELECTION", `${target.iid}: --colocated requires a shared_device group`);
  const peers = engines.filter((e) => e.iid !== target.iid && e.group === target.group);
  if (!peers.length) throw new ProfileError("NARWHAL_PROFILE_SELECTION", `${target.iid}: no neighbours in shared_device group ${target.group}`);
  return peers;
}

/** Lanes: engines sharing a GPU group take turns; with `--colocated` every engine does (narwhal's rule). */
export function fleetLanes(targets: readonly FleetEngine[], colocated: boolean): FleetEngine[][] {
  if (colocated) return [[...targets]];
  const lanes = new Map<string, FleetEngine[]>();
  for (const e of targets) {
    const key = e.group ?? `engine:${e.iid}`;
    lanes.set(key, [...(lanes.get(key) ?? []), e]);
  }
  return [...lanes.values()];
}
