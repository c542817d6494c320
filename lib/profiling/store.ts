/**
 * The profile store and its `.samples.json` sidecar in the schema narwhal-inference 0.7.0 reads
 * (`narwhal.profiles` v1, rows as `narwhal.profiling.model.Profile`), the row rules its loader enforces,
 * and the generation digests that bind each row to the process it was measured on.
 */
import { createHash } from "node:crypto";
import { canonicalDigest, JsonNumberText } from "../attestation/canonical";
import { ProfileError } from "./errors";
import type { DecodePlane, DecodePoint, PrefillFit } from "./fit";

export const STORE_SCHEMA = "narwhal.profiles";
export const STORE_SCHEMA_VERSION = 1;
/** narwhal-profile's live-sweep sidecar format. */
export const SAMPLES_METHOD_VERSION = 2;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** One row, with narwhal's field names. Optional fields are omitted, never null. */
export interface ProfileRow {
  iid: string;
  ttft_a: number;
  ttft_b: number;
  ttft_c: number;
  tpot_slope: number;
  tpot_intercept: number;
  generation_digest: string;
  kv_capacity_tokens?: number;
  tpot_request_slope: number;
  decode_min_requests: number;
  decode_max_requests: number;
  decode_min_kv_tokens: number;
  decode_max_kv_tokens: number;
  decode_fit_mape: number;
  decode_cv_mape: number;
  prefill_min_tokens: number;
  prefill_max_tokens: number;
  decode_min_output_tokens: number;
  decode_max_output_tokens: number;
  ttft_block_tokens?: number;
  ttft_split?: number;
  /** Set together on a row measured with neighbour load on its shared GPU group (`--colocated`). */
  colocated_group?: string;
  colocated_target_role?: "prefill" | "decode";
  colocated_prefill_engines?: number;
  colocated_decode_engines?: number;
  colocated_prefill_rps?: number;
  colocated_decode_rps?: number;
}

/** The sidecar path narwhal derives: the store's suffix replaced by `.samples.json`. */
export function samplesPath(storePath: string): string {
  const slash = storePath.lastIndexOf("/");
  const base = storePath.slice(slash + 1);
  const dot = base.lastIndexOf(".");
  const stem = dot > 0 ? storePath.slice(0, slash + 1 + dot) : storePath;
  return `${stem}.samples.json`;
}

export interface RowFacts {
  iid: string;
  generationDigest: string;
  prefill: PrefillFit;
  /** Every raw prefill timing: the domain is taken from them, as narwhal does. */
  prefillSamples: ReadonlyArray<readonly [number, number]>;
  blockTokens: number | null;
  decode: DecodePlane;
  decodePoints: readonly DecodePoint[];
  decodeFitMape: number;
  decodeCvMape: number | null;
  kvCapacityTokens: number | null;
  /** Largest tokens per stream any cohort used (a retry may lengthen streams). */
  decodeMaxOutputTokens: number;
}

/** narwhal's `profile_instance` row: coefficients and the measured domain. */
export function buildRow(f: RowFacts): ProfileRow {
  if (f.decodeCvMape === null) {
    throw new ProfileError("NARWHAL_PROFILE_FIT", `${f.iid}: the decode sweep gives no cross-validation error (fewer than four points or an unfittable subset); add decode input lengths or concurrency points`);
  }
  const req = f.decodePoints.map((p) => p[0]);
  const kv = f.decodePoints.map((p) => p[1]);
  const n = f.prefillSamples.map((p) => p[0]);
  const row: ProfileRow = {
    iid: f.iid,
    ttft_a: f.prefill.a,
    ttft_b: f.prefill.b,
    ttft_c: f.prefill.c,
    tpot_slope: f.decode.kvSlope,
    tpot_intercept: f.decode.intercept,
    generation_digest: f.generationDigest,
    ...(f.kvCapacityTokens !== null ? { kv_capacity_tokens: f.kvCapacityTokens } : {}),
    tpot_request_slope: f.decode.requestSlope,
    decode_min_requests: Math.max(1, Math.ceil(Math.min(...req))),
    decode_max_requests: Math.max(1, Math.floor(Math.max(...req))),
    decode_min_kv_tokens: Math.max(1, Math.ceil(Math.min(...kv))),
    decode_max_kv_tokens: Math.max(1, Math.floor(Math.max(...kv))),
    decode_fit_mape: f.decodeFitMape,
    decode_cv_mape: f.decodeCvMape,
    prefill_min_tokens: Math.floor(Math.min(...n)),
    prefill_max_tokens: Math.ceil(Math.max(...n)),
    decode_min_output_tokens: 1,
    decode_max_output_tokens: f.decodeMaxOutputTokens,
    ...(f.prefill.split !== null && f.blockTokens !== null ? { ttft_block_tokens: f.blockTokens, ttft_split: f.prefill.split } : {}),
  };
  const problem = rowProblem(row as unknown as Record<string, unknown>);
  if (problem) throw new ProfileError("NARWHAL_PROFILE_STORE", problem);
  return row;
}

const FLOATS = ["ttft_a", "ttft_b", "ttft_c", "tpot_slope", "tpot_intercept", "tpot_request_slope", "decode_fit_mape", "decode_cv_mape", "ttft_split", "colocated_prefill_rps", "colocated_decode_rps"] as const;
const OPTIONAL_FLOATS = new Set<string>(["ttft_split", "tpot_request_slope", "colocated_prefill_rps", "colocated_decode_rps"]);
const INTS = [
  "kv_capacity_tokens",
  "decode_min_requests",
  "decode_max_requests",
  "decode_min_kv_tokens",
  "decode_max_kv_tokens",
  "prefill_min_tokens",
  "prefill_max_tokens",
  "decode_min_output_tokens",
  "decode_max_output_tokens",
  "ttft_block_tokens",
  "colocated_prefill_engines",
  "colocated_decode_engines",
] as const;
const KNOWN = new Set<string>(["iid", "generation_digest", "colocated_group", "colocated_target_role", ...FLOATS, ...INTS]);

/** The first rule of narwhal's row check (`model._check`) this row breaks, for the fields this program writes. */
export function rowProblem(raw: Record<string, unknown>): string | undefined {
  const iid = raw.iid;
  if (typeof iid !== "string" || !iid) return "profile <unnamed>: iid must be a nonempty string";
  const where = `profile ${iid}`;
  const unknown = Object.keys(raw).filter((k) => !KNOWN.has(k));
  if (unknown.length) return `${where}: unknown profile field(s): ${unknown.sort().join(", ")}`;
  if (typeof raw.generation_digest !== "string" || !DIGEST.test(raw.generation_digest)) return `${where}: generation_digest must be a sha256 digest`;
  for (const k of FLOATS) {
    const v = raw[k];
    if (v === undefined && OPTIONAL_FLOATS.has(k)) continue;
    if (typeof v !== "number" || !Number.isFinite(v)) return `${where}: ${k} must be a finite number`;
    if (v < 0) return `${where}: ${k} must be nonnegative`;
  }
  for (const k of INTS) {
    const v = raw[k];
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isInteger(v)) return `${where}: ${k} must be an integer`;
    if (v < 1) return `${where}: ${k} must be positive`;
  }
  for (const k of ["decode_min_requests", "decode_max_requests", "decode_min_kv_tokens", "decode_max_kv_tokens"]) {
    if (raw[k] === undefined) return `${where}: ${k} is required on a current profile`;
  }
  const pairs = [
    ["decode_min_requests", "decode_max_requests"],
    ["decode_min_kv_tokens", "decode_max_kv_tokens"],
    ["prefill_min_tokens", "prefill_max_tokens"],
    ["decode_min_output_tokens", "decode_max_output_tokens"],
  ] as const;
  for (const [lo, hi] of pairs) {
    if (typeof raw[lo] === "number" && typeof raw[hi] === "number" && (raw[lo]) > (raw[hi])) return `${where}: ${lo} must not exceed ${hi}`;
  }
  if (typeof raw.kv_capacity_tokens === "number" && raw.kv_capacity_tokens < (raw.decode_max_kv_tokens as number)) return `${where}: kv_capacity_tokens must be at least decode_max_kv_tokens`;
  if ((raw.ttft_block_tokens === undefined) !== (raw.ttft_split === undefined)) return `${where}: ttft_block_tokens and ttft_split go together`;
  return colocatedProblem(raw, where);
}

/** narwhal's role-mix rule: a colocated row names its group, target role, role mix and neighbour load. */
function colocatedProblem(raw: Record<string, unknown>, where: string): string | undefined {
  const group = raw.colocated_group;
  const role = raw.colocated_target_role;
  const mix = [raw.colocated_prefill_engines, raw.colocated_decode_engines];
  const loads = [raw.colocated_prefill_rps, raw.colocated_decode_rps];
  if (group !== undefined) {
    if (typeof group !== "string" || !group) return `${where}: colocated_group must be a nonempty string`;
    if (role !== "prefill" && role !== "decode") return `${where}: colocated_target_role must be prefill or decode`;
    if (mix.some((v) => v === undefined) || loads.some((v) => v === undefined) || (mix[0] as number) + (mix[1] as number) < 2) {
      return `${where}: colocated role mix and neighbour load are required`;
    }
  } else if (role !== undefined || [...mix, ...loads].some((v) => v !== undefined)) {
    return `${where}: colocated role mix requires colocated_group`;
  }
  return undefined;
}

/**
 * What makes a row one measured variant: its engine, and for a colocated row its GPU group, role split
 * and target role (narwhal's role-mix key). A store holds each variant once.
 */
export function variantKey(r: ProfileRow): string {
  return JSON.stringify(r.colocated_group === undefined ? [r.iid] : [r.iid, r.colocated_group, r.colocated_prefill_engines, r.colocated_decode_engines, r.colocated_target_role]);
}

/** The store document: rows in the order narwhal's `ProfileStore.put` writes them (iid, then role mix). */
export function storeDocument(rows: readonly ProfileRow[], meta: Record<string, unknown>): Record<string, unknown> {
  const seen = new Set<string>();
  for (const r of rows) {
    const problem = rowProblem(r as unknown as Record<string, unknown>);
    if (problem) throw new ProfileError("NARWHAL_PROFILE_STORE", problem);
    const key = variantKey(r);
    if (seen.has(key)) throw new ProfileError("NARWHAL_PROFILE_STORE", r.colocated_group === undefined ? `duplicate profile id ${JSON.stringify(r.iid)}` : `duplicate profile role mix ${key}`);
    seen.add(key);
  }
  const order = (r: ProfileRow): Array<string | number> => [r.iid, r.colocated_group ?? "", r.colocated_prefill_engines ?? 0, r.colocated_decode_engines ?? 0, r.colocated_target_role ?? ""];
  const cmp = (a: ProfileRow, b: ProfileRow): number => {
    const [x, y] = [order(a), order(b)];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
  };
  return { schema: STORE_SCHEMA, schema_version: STORE_SCHEMA_VERSION, meta, profiles: [...rows].sort(cmp) };
}

/** Profile ids must equal the fleet's engines exactly: a mismatch stops the router's startup. */
export function idsProblem(rows: readonly { iid: string }[], fleetIds: readonly string[]): string | undefined {
  const stored = new Set(rows.map((r) => r.iid));
  const fleet = new Set(fleetIds);
  const missing = [...fleet].filter((id) => !stored.has(id)).sort();
  const extra = [...stored].filter((id) => !fleet.has(id)).sort();
  if (!missing.length && !extra.length) return undefined;
  return `profile ids must match the fleet's engines: ${missing.length ? `missing ${missing.join(", ")}` : ""}${missing.length && extra.length ? "; " : ""}${extra.length ? `not in the fleet ${extra.join(", ")}` : ""}`;
}

/** One engine's sidecar entry: every raw observation, the fit, and the generation evidence it binds. */
export interface EngineSamples {
  max_model_len: number;
  sweep: Record<string, unknown>;
  max_num_seqs?: number;
  generation_evidence: Record<string, unknown>;
  prefill: Array<[number, number]>;
  prefill_fit_points: Array<[number, number]>;
  prefill_fit_mape: number;
  prefill_block_tokens: number | null;
  decode: Array<[number, number, number]>;
  decode_intervals: Array<{ input_tokens: number; concurrency: number; repeat: number; tokens: number; intervals: Array<[number, number, number]> }>;
  prefix_cache_hit_tokens: number | null;
  profile: ProfileRow;
}

export function samplesDocument(engines: Readonly<Record<string, EngineSamples>>, extra: { meta: Record<string, unknown>; model: string; sweep: Record<string, unknown> }): Record<string, unknown> {
  return {
    method_version: SAMPLES_METHOD_VERSION,
    meta: extra.meta,
    model: extra.model,
    sweep: extra.sweep,
    observation_timeout_s: null,
    engines: Object.fromEntries(Object.keys(engines).sort().map((k) => [k, engines[k]])),
  };
}

/** The bytes written for a document: narwhal's `json.dumps(document, indent=2) + "\n"` layout. */
export function documentBytes(document: unknown): Buffer {
  return Buffer.from(JSON.stringify(document, null, 2) + "\n", "utf8");
}

export const sha256Hex = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** Python's `repr(float)` for the values a process start time takes (1e-4 ≤ |x| < 1e16). */
export function pythonFloatText(x: number): string {
  const s = String(x);
  return /[.eE]/.test(s) || !Number.isFinite(x) ? s : `${s}.0`;
}

/**
 * The binding digest when no engine contract is configured: narwhal's `identity_generation`, the
 * canonical digest of `{engine: {version, process_start_time_seconds}}` with the start time as a float.
 */
export function identityGenerationDigest(version: string, processStartTime: number): string {
  return canonicalDigest({ engine: { version, process_start_time_seconds: new JsonNumberText(pythonFloatText(processStartTime)) } });
}

/** narwhal's `binding_digest`: the attestation's `launch_digest` when it has one, else its `attestation_digest`. */
export function attestationBindingDigest(attestationDigest: string, launchDigest?: string | null): string {
  return launchDigest || attestationDigest;
}
