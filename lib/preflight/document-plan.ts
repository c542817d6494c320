/**
 * The preflight plan and observer settings from a fleet document: the budgets are the ones the router
 * will use, with narwhal-inference 0.7.0's defaults where the document leaves a key out.
 */
import { fitLimitsOf } from "../profiling/fit-limits";
import { declaredContract } from "./declared-contract";
import { restartRiskApplies } from "./restart-risk";
import type { GateProfile } from "./judge";
import type { PairMode } from "./pairs";
import type { PreflightPlan } from "./run";
import type { ScheduleMode } from "./schedule";

const num = (v: unknown, fallback: number): number => (typeof v === "number" && Number.isFinite(v) ? v : fallback);
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

export interface DocumentEngine {
  iid: string;
  url: string;
  attestationUrl?: string;
  role: "prefill" | "decode";
  pin: boolean;
  deviceGroup?: string;
}

/** The document's engines; a malformed one is named before anything is probed. */
export function documentEngines(doc: Record<string, unknown>): DocumentEngine[] {
  if (!Array.isArray(doc.engines) || !doc.engines.length) throw new Error("fleetDocument.engines: expected a non-empty list");
  return doc.engines.map((raw, i) => {
    const e = obj(raw);
    if (typeof e.iid !== "string" || !e.iid) throw new Error(`fleetDocument.engines[${i}].iid: expected a non-empty string`);
    if (typeof e.url !== "string" || !/^https?:\/\/[^/\s]+$/.test(e.url)) throw new Error(`fleetDocument.engines[${i}].url (${e.iid}): expected an http://host:port base URL`);
    const role = e.role ?? "decode";
    if (role !== "prefill" && role !== "decode") throw new Error(`fleetDocument.engines[${i}].role (${e.iid}): expected prefill or decode`);
    const group = obj(e.shared_device).group;
    return {
      iid: e.iid,
      url: e.url,
      ...(typeof e.attestation_url === "string" ? { attestationUrl: e.attestation_url } : {}),
      role,
      pin: e.pin === true,
      ...(typeof group === "string" && group ? { deviceGroup: group } : {}),
    };
  });
}

export function timeoutsOf(doc: Record<string, unknown>) {
  const engine = obj(doc.engine);
  const serving = obj(doc.serving);
  return {
    healthS: num(engine.health_timeout_s, 5),
    prefillS: num(serving.prefill_timeout_s, 120),
    tokenizeS: num(engine.tokenize_timeout_s, 2),
    firstTokenS: num(engine.first_token_timeout_s, 2.5),
    decodeReadS: num(engine.decode_read_timeout_s, 60),
    requestS: num(serving.request_timeout_s, 600),
  };
}

export function planOf(doc: Record<string, unknown>, profiles: readonly GateProfile[], opts: { pairs: PairMode; repeats: number; schedule: ScheduleMode }): PreflightPlan {
  const engines = documentEngines(doc);
  const slo = obj(doc.slo);
  const profilesBlock = obj(doc.profiles);
  // Loaded as narwhal loads it, so the fingerprint and the undeclared fields are the ones narwhal-check prints.
  const declared = declaredContract(doc.engine_contract);
  const engineBlock = obj(doc.engine);
  const recovery = obj(doc.recovery);
  const t = timeoutsOf(doc);
  if (typeof doc.model !== "string" || !doc.model) throw new Error("fleetDocument.model: expected the served model name");
  return {
    engines: engines.map((e) => ({ iid: e.iid, role: e.role, pin: e.pin, ...(e.deviceGroup ? { deviceGroup: e.deviceGroup } : {}) })),
    model: doc.model,
    slo: { ttftS: num(slo.ttft_s, NaN), tpotS: num(slo.tpot_s, NaN) },
    tokenize: obj(doc.engine).tokenize !== false,
    policy: fitLimitsOf(profilesBlock),
    profiles: new Map(profiles.map((p) => [p.iid, p])),
    contract: declared ? { fingerprint: declared.fingerprint, engineVersion: declared.engineVersion, undeclared: declared.undeclared } : null,
    calibrationPath: typeof engineBlock.first_token_calibration_path === "string" ? engineBlock.first_token_calibration_path : "",
    ...(restartRiskApplies(typeof recovery.engine_restart_policy === "string" ? recovery.engine_restart_policy : "individual", declared?.contract.connector ?? null)
      ? { restartRisk: engines.map((e) => ({ iid: e.iid, host: new URL(e.url).hostname, role: e.role, pin: e.pin })) }
      : {}),
    pairs: opts.pairs,
    repeats: opts.repeats,
    schedule: opts.schedule,
    timeouts: { firstTokenS: t.firstTokenS, requestS: t.requestS },
  };
}

/** What the preflight's observer needs of the document: the model, the declared contract and the budgets. */
export function observerSettings(doc: Record<string, unknown>, apiKey: string | undefined) {
  const t = timeoutsOf(doc);
  return { model: String(doc.model), apiKey, contract: doc.engine_contract ? obj(doc.engine_contract) : null, timeouts: t };
}
