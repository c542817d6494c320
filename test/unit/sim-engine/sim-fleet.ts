/**
 * A fleet of engine simulators as the preflight and `narwhal-check` see it: each engine's profile row
 * taken from its ground truth and live generation (so a profile matches the engine exactly), and the
 * fleet document with its profile store, written side by side.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { httpObserver, type ObserverOptions } from "../../../lib/preflight/http-observer";
import { processStartTime, parsePrometheusText } from "../../../lib/engine/prometheus";
import type { GateProfile } from "../../../lib/preflight/judge";
import type { PreflightPlan } from "../../../lib/preflight/run";
import type { ScheduleMode } from "../../../lib/preflight/schedule";
import { identityGenerationDigest, storeDocument, type ProfileRow } from "../../../lib/profiling/store";
import { http, type SimEngine } from "./helpers";

export async function simProfileRow(iid: string, e: SimEngine): Promise<ProfileRow> {
  const truth = (await http(`${e.controlUrl}/truth`)).json.effective_coefficients as Record<string, number>;
  const version = (await http(`${e.url}/version`)).json.version as string;
  const start = processStartTime(parsePrometheusText((await http(`${e.url}/metrics`)).text))!;
  return {
    iid,
    ttft_a: truth.prefillA,
    ttft_b: truth.prefillB,
    ttft_c: truth.prefillC,
    tpot_slope: truth.decodeKv,
    tpot_intercept: truth.decodeBase,
    tpot_request_slope: truth.decodeReq,
    generation_digest: identityGenerationDigest(version, start),
    decode_min_requests: 1,
    decode_max_requests: 8,
    decode_min_kv_tokens: 256,
    decode_max_kv_tokens: 12000,
    decode_fit_mape: 0.01,
    decode_cv_mape: 0.02,
    prefill_min_tokens: 256,
    prefill_max_tokens: 12000,
    decode_min_output_tokens: 3,
    decode_max_output_tokens: 64,
  };
}

export interface SimFleet {
  model: string;
  engines: Array<{ iid: string; url: string; role: string; pin?: boolean }>;
  rows: ProfileRow[];
  tpotS: number;
  /** Who wrote the profile store, as its header says. */
  writer: string;
}

/** Writes dir/profiles.json and dir/fleet.json; the document's engine key comes from NARWHAL_ENGINE_API_KEY. */
export function writeSimFleet(dir: string, f: SimFleet): { file: string; doc: Record<string, any> } {
  const profilesPath = path.join(dir, "profiles.json");
  fs.writeFileSync(profilesPath, JSON.stringify(storeDocument(f.rows, { package: "narwhal-fleet", writer: f.writer })));
  const doc = {
    schema: "narwhal.fleet",
    schema_version: 2,
    model: f.model,
    engines: f.engines,
    slo: { ttft_s: 10, tpot_s: f.tpotS },
    serving: { request_timeout_s: 60, prefill_timeout_s: 30 },
    engine: { first_token_timeout_s: 2.5, health_timeout_s: 5, engine_api_key_env: "NARWHAL_ENGINE_API_KEY" },
    profiles: { path: profilesPath },
  };
  const file = path.join(dir, "fleet.json");
  fs.writeFileSync(file, JSON.stringify(doc, null, 2));
  return { file, doc };
}

/**
 * Our preflight over a written sim fleet document: the plan (every pair, once, under `schedule`) and an
 * observer with the document's deadlines, so it judges what `narwhal-check` judges on the same file.
 */
export function simPreflight(doc: Record<string, any>, profiles: Map<string, GateProfile>, apiKey: string, schedule: ScheduleMode, recentLogs?: ObserverOptions["recentLogs"]) {
  const engines = doc.engines as SimFleet["engines"];
  const plan: PreflightPlan = {
    engines: engines.map((e) => ({ iid: e.iid, role: e.role as "prefill" | "decode", ...(e.pin === undefined ? {} : { pin: e.pin }) })),
    model: doc.model,
    slo: { ttftS: doc.slo.ttft_s, tpotS: doc.slo.tpot_s },
    tokenize: true,
    policy: { maxDecodeFitMape: 0.05, maxDecodeCvMape: 0.13 },
    profiles,
    contract: null,
    pairs: "mesh",
    repeats: 1,
    schedule,
    timeouts: { firstTokenS: 2.5, requestS: 60 },
  };
  const observer = httpObserver({
    engines: engines.map((e) => ({ iid: e.iid, url: e.url })),
    model: doc.model,
    apiKey,
    contract: null,
    timeouts: { healthS: 5, prefillS: 30, tokenizeS: 2, firstTokenS: 2.5, decodeReadS: 60, requestS: 60 },
    ...(recentLogs ? { recentLogs } : {}),
  });
  return { plan, observer };
}
