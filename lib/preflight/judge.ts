/**
 * Gate verdicts from observed facts, as narwhal-check 0.7.0 judges them (its messages, so the two
 * reports read alike). Pure: the driver observes, these decide.
 */
import { fitProblems, pyG, type FitEvidence, type FitLimits } from "../profiling/fit-limits";
import { UNCALIBRATED_WARNING } from "./restart-risk";
import type { Report } from "./types";

/** The profile columns the gates read (narwhal.profiling.model.Profile): the fits, and the decode evidence the profile gate's limits judge. */
export interface GateProfile extends FitEvidence {
  readonly ttft_a: number;
  readonly ttft_b: number;
  readonly ttft_c: number;
  readonly tpot_slope: number;
  readonly tpot_intercept: number;
  readonly tpot_request_slope?: number;
  readonly generation_digest?: string | null;
  readonly prefill_min_tokens?: number | null;
  readonly ttft_block_tokens?: number | null;
  readonly ttft_split?: number | null;
}

export function prefillTime(p: GateProfile, inputLen: number): number {
  const tokens = Math.max(inputLen, p.prefill_min_tokens ?? 0);
  let split = 0;
  if (p.ttft_split != null && p.ttft_block_tokens) {
    // A prompt that ends inside a block past the first pays the split step.
    if (tokens > p.ttft_block_tokens && tokens % p.ttft_block_tokens !== 0) split = p.ttft_split;
  }
  return Math.max(0, p.ttft_a * tokens * tokens + p.ttft_b * tokens + p.ttft_c + split);
}

export function tokenInterval(p: GateProfile, batchTokens: number, batchRequests = 0): number {
  return Math.max(0, p.tpot_slope * batchTokens + (p.tpot_request_slope ?? 0) * batchRequests + p.tpot_intercept);
}

export function maxTokens(p: GateProfile, tpotS: number, batchRequests = 0): number {
  if (p.decode_max_requests != null && batchRequests > p.decode_max_requests) return 0;
  const fixed = p.tpot_intercept + (p.tpot_request_slope ?? 0) * batchRequests;
  if (fixed > tpotS) return 0;
  let capacity = p.tpot_slope <= 0 ? Infinity : Math.max(0, (tpotS - fixed) / p.tpot_slope);
  if (p.decode_max_kv_tokens != null) capacity = Math.min(capacity, p.decode_max_kv_tokens);
  return capacity;
}

export interface Engine {
  readonly iid: string;
}

/**
 * calibration: without `engine.first_token_calibration_path` narwhal-check warns. A named file is
 * verified where it lies (the router host) by narwhal-check, not by this program: that is a skip here.
 */
export function judgeCalibrationEvidence(calibrationPath: string, rep: Report): void {
  if (!calibrationPath) rep.warn("calibration", UNCALIBRATED_WARNING);
  else rep.skip("calibration", `first-token calibration ${calibrationPath} is not verified by this preflight; run narwhal-check on the router host`);
}

/** reach: `/health` answered 200 within the health budget. Returns the live engines. */
export function judgeReach(engines: readonly Engine[], healthy: ReadonlyMap<string, boolean>, rep: Report): Set<string> {
  const live = new Set<string>();
  for (const e of engines) {
    if (healthy.get(e.iid)) {
      rep.ok("reach", `${e.iid} /health`);
      live.add(e.iid);
    } else rep.fail("reach", `${e.iid} /health did not answer 200`);
  }
  return live;
}

/** What one engine's contract check observed: the live version and attestation problems, or why it could not. */
export type ContractObservation = { readonly version: string; readonly problems: readonly string[]; readonly processStart?: number } | { readonly error: string };

/** contract: each attestation binds the live process and the declared contract; versions agree. Returns engines unsafe to transfer. */
export function judgeContract(
  engines: readonly Engine[],
  live: ReadonlySet<string>,
  declared: { fingerprint: string; engineVersion: string; undeclared?: readonly string[] } | null,
  observed: ReadonlyMap<string, ContractObservation>,
  rep: Report,
): Set<string> {
  if (declared === null) rep.skip("contract", "no engine_contract declared; checking live vLLM versions only");
  else {
    rep.ok("contract", `declared engine contract ${declared.fingerprint}`);
    // Fields the contract leaves unset are not checked, so narwhal-check reports them as a skip (the run is degraded).
    if (declared.undeclared?.length) rep.skip("contract", `contract ${declared.fingerprint} undeclared: ${declared.undeclared.join(", ")}`);
  }
  const versions = new Map<string, string>();
  const unsafe = new Set<string>();
  for (const e of engines) {
    if (!live.has(e.iid)) {
      rep.skip("contract", `${e.iid} contract: unreachable`);
      continue;
    }
    const o = observed.get(e.iid);
    if (!o || "error" in o) {
      const message = `${e.iid} vLLM ${declared ? "identity" : "version"} unreadable: ${o && "error" in o ? o.error : "not observed"}`;
      if (declared) {
        rep.fail("contract", message);
        unsafe.add(e.iid);
      } else rep.skip("contract", message);
      continue;
    }
    versions.set(e.iid, o.version);
    rep.ok("contract", `${e.iid} vLLM ${o.version}`);
    if (!declared) continue;
    if (o.version !== declared.engineVersion) {
      rep.fail("contract", `${e.iid} vLLM ${o.version}, expected ${declared.engineVersion} from contract ${declared.fingerprint}`);
      unsafe.add(e.iid);
      continue;
    }
    if (o.problems.length) {
      rep.fail("contract", `${e.iid} attestation: ${o.problems.join("; ")}`);
      unsafe.add(e.iid);
    } else rep.ok("contract", `${e.iid} contract ${declared.fingerprint} attested for process ${(o.processStart ?? 0).toFixed(6)}`);
  }
  if (new Set(versions.values()).size > 1) {
    const detail = [...versions].sort(([a], [b]) => (a < b ? -1 : 1)).map(([iid, v]) => `${iid}=${v}`).join(", ");
    rep.fail("contract", `mixed vLLM versions before KV transfer: ${detail}`);
    for (const iid of versions.keys()) unsafe.add(iid);
  }
  return unsafe;
}

/** The gate's limits are the Profile resource's: one definition, so the two cannot disagree. */
export type ProfilePolicy = FitLimits;

export function decodeEvidenceProblems(p: GateProfile, policy: ProfilePolicy): string[] {
  return fitProblems(p, policy).map((x) => x.message);
}

/** profile: a row per engine within the decode policy, no row for an engine the fleet lacks. */
export function judgeProfiles(engines: readonly Engine[], store: ReadonlyMap<string, GateProfile>, policy: ProfilePolicy, rep: Report): void {
  for (const e of engines) {
    const p = store.get(e.iid);
    if (!p) {
      rep.fail("profile", `${e.iid} has no profile; run narwhal-profile --fleet <config>`);
      continue;
    }
    const problems = decodeEvidenceProblems(p, policy);
    for (const problem of problems) rep.fail("profile", problem);
    if (!problems.length) rep.ok("profile", `${e.iid} decode_fit_mape=${p.decode_fit_mape!.toFixed(4)} decode_cv_mape=${p.decode_cv_mape!.toFixed(4)} within the ${pyG(policy.maxDecodeFitMape)}/${pyG(policy.maxDecodeCvMape)} limits`);
  }
  const ids = new Set(engines.map((e) => e.iid));
  for (const iid of [...store.keys()].filter((k) => !ids.has(k)).sort()) {
    rep.fail("profile", `${iid} has a profile but no configured engine; remove the stale row or re-run narwhal-profile --fleet <config>`);
  }
}

/** profile (generation): the saved digest equals the live engine's. Returns engines whose profile is stale. */
export function judgeProfileGenerations(
  engines: readonly Engine[],
  store: ReadonlyMap<string, GateProfile>,
  live: ReadonlySet<string>,
  liveDigests: ReadonlyMap<string, { digest: string } | { error: string }>,
  rep: Report,
): Set<string> {
  const unsafe = new Set<string>();
  for (const e of engines) {
    const p = store.get(e.iid);
    if (!p || !live.has(e.iid)) continue;
    const g = liveDigests.get(e.iid);
    if (!g || "error" in g) {
      rep.fail("profile", `${e.iid} profile generation unreadable: ${g && "error" in g ? g.error : "not observed"}; reprofile before admission`);
      unsafe.add(e.iid);
      continue;
    }
    if (!p.generation_digest) {
      rep.fail("profile", `${e.iid} profile has no generation evidence; reprofile before admission`);
      unsafe.add(e.iid);
    } else if (p.generation_digest !== g.digest) {
      rep.fail("profile", `${e.iid} profile generation differs from the live engine; reprofile before admission`);
      unsafe.add(e.iid);
    } else rep.ok("profile", `${e.iid} profile generation ${g.digest}`);
  }
  return unsafe;
}

/** model: `/v1/models` lists the configured model (cross-model KV reuse corrupts output silently). */
export function judgeModel(engines: readonly Engine[], live: ReadonlySet<string>, model: string, served: ReadonlyMap<string, readonly string[] | { error: string }>, rep: Report): Set<string> {
  const incompatible = new Set<string>();
  for (const e of engines) {
    if (!live.has(e.iid)) {
      rep.skip("model", `${e.iid} model: unreachable`);
      continue;
    }
    const names = served.get(e.iid);
    if (!names || !Array.isArray(names)) {
      rep.fail("model", `${e.iid} /v1/models unreadable: ${names && "error" in names ? names.error : "not observed"}`);
      incompatible.add(e.iid);
    } else if (names.includes(model)) rep.ok("model", `${e.iid} serves ${model}`);
    else {
      rep.fail("model", `${e.iid} serves ${JSON.stringify(names)}; expected ${model}`);
      incompatible.add(e.iid);
    }
  }
  return incompatible;
}

/** One engine's pace probe: the best one-token prefill time and the prompt length the engine counted, or why it failed. */
export type PaceObservation = { readonly seconds: number; readonly promptTokens?: number } | { readonly error: string };

export const PACE_TOLERANCE = 1.5;

/**
 * pace: with three or more successful probes each is compared with the fleet median; every engine with
 * a saved (current) profile is also compared with its own prediction at the length it counted. A
 * smaller fleet without profiles cannot judge pace. Returns slow engines.
 */
export function judgePace(
  engines: readonly Engine[],
  live: ReadonlySet<string>,
  observed: ReadonlyMap<string, PaceObservation>,
  store: ReadonlyMap<string, GateProfile> | null,
  rep: Report,
  tolerance = PACE_TOLERANCE,
): Set<string> {
  const times = new Map<string, number>();
  const lens = new Map<string, number>();
  const slow = new Set<string>();
  for (const e of engines) {
    if (!live.has(e.iid)) {
      rep.skip("pace", `${e.iid} pace: unreachable`);
      continue;
    }
    const o = observed.get(e.iid);
    if (!o || "error" in o) {
      rep.fail("pace", `${e.iid} pace probe: ${o && "error" in o ? o.error : "not observed"}`);
      slow.add(e.iid);
      continue;
    }
    times.set(e.iid, o.seconds);
    if (o.promptTokens !== undefined && Number.isInteger(o.promptTokens) && o.promptTokens > 0) lens.set(e.iid, o.promptTokens);
  }
  const sorted = [...times].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (times.size >= 3) {
    const ordered = [...times.values()].sort((a, b) => a - b);
    const median = ordered[Math.floor(ordered.length / 2)];
    for (const [iid, t] of sorted) {
      if (t > tolerance * median) {
        slow.add(iid);
        rep.fail("pace", `${iid} pace: ${t.toFixed(2)}s against a fleet median of ${median.toFixed(2)}s (> ${tolerance}x) - throttle or degradation exceeds observed fleet pace`);
      } else rep.ok("pace", `${iid} pace ${t.toFixed(2)}s (median ${median.toFixed(2)}s)`);
    }
  }
  const profiled = new Set<string>();
  if (store && store.size) {
    for (const [iid, t] of sorted) {
      const p = store.get(iid);
      if (!p) continue;
      const n = lens.get(iid);
      if (n === undefined) {
        slow.add(iid);
        rep.fail("pace", `${iid} pace: profile comparison requires exact usage.prompt_tokens`);
        continue;
      }
      const want = prefillTime(p, n);
      if (!Number.isFinite(want) || want <= 0) {
        slow.add(iid);
        rep.fail("pace", `${iid} pace: profile prediction must be positive and finite`);
        continue;
      }
      profiled.add(iid);
      if (t > tolerance * want) {
        slow.add(iid);
        rep.fail("pace", `${iid} pace: ${t.toFixed(2)}s against its own profile's ${want.toFixed(2)}s (> ${tolerance}x) - the fit no longer describes this engine`);
      } else rep.ok("pace", `${iid} pace ${t.toFixed(2)}s (own profile ${want.toFixed(2)}s)`);
    }
  }
  const missing = [...times.keys()].filter((iid) => !profiled.has(iid)).sort();
  if (times.size > 0 && times.size < 3 && missing.length) {
    rep.skip("pace", `pace needs 3 engines or individual profiles with exact prompt lengths; missing evidence for ${missing.join(", ")}`);
  }
  return slow;
}

/** tokenize: an exact count from `/tokenize` when sizing is enabled (the character estimate's error is squared by prefill cost). */
export function judgeTokenize(engines: readonly Engine[], live: ReadonlySet<string>, enabled: boolean, counts: ReadonlyMap<string, number | { error: string }>, rep: Report): void {
  if (!enabled) {
    rep.skip("tokenize", "tokenize: engine.tokenize is disabled; prefill cost uses the character estimate");
    return;
  }
  for (const e of engines) {
    if (!live.has(e.iid)) {
      rep.skip("tokenize", `${e.iid} tokenize: unreachable`);
      continue;
    }
    const n = counts.get(e.iid);
    if (n === undefined || typeof n !== "number") rep.fail("tokenize", `${e.iid} /tokenize exact count failed: ${n && typeof n === "object" ? n.error : "not observed"}`);
    else if (n > 0) rep.ok("tokenize", `${e.iid} /tokenize -> ${n} tokens`);
    else rep.fail("tokenize", `${e.iid} /tokenize returned no count`);
  }
}

/** slo: the TPOT target holds at the measured floor (fewest requests and KV tokens) and the TTFT target exceeds one-token prefill. */
export function judgeSlo(engines: readonly Engine[], store: ReadonlyMap<string, GateProfile>, slo: { ttftS: number; tpotS: number }, rep: Report): void {
  for (const e of engines) {
    const p = store.get(e.iid);
    if (!p) {
      rep.skip("slo", `${e.iid} slo: no profile`);
      continue;
    }
    const requests = p.decode_min_requests;
    const tokens = p.decode_min_kv_tokens;
    if (requests == null || tokens == null) {
      rep.fail("slo", `${e.iid} TPOT qualification requires measured request and KV bounds`);
      continue;
    }
    const interval = tokenInterval(p, tokens, requests);
    if (interval > slo.tpotS) {
      rep.fail("slo", `${e.iid} tpot ${(interval * 1000).toFixed(1)} ms at ${requests} requests and ${tokens} KV tokens exceeds the ${(slo.tpotS * 1000).toFixed(1)} ms target`);
      continue;
    }
    if (slo.ttftS <= prefillTime(p, 1)) {
      rep.fail("slo", `${e.iid} ttft target is below its own single-token prefill time`);
      continue;
    }
    rep.ok("slo", `${e.iid} holds ${maxTokens(p, slo.tpotS, requests).toFixed(0)} batch tokens across ${requests} requests at the TPOT target`);
  }
}
