/**
 * A fleet of engine simulators as the preflight and `narwhal-check` see it: each engine's profile row
 * taken from its ground truth and live generation (so a profile matches the engine exactly), and the
 * fleet document with its profile store, written side by side.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { processStartTime, parsePrometheusText } from "../../../lib/engine/prometheus";
import { identityGenerationDigest, storeDocument, type ProfileRow } from "../../../lib/profiling";
import { http, type SimEngine } from "./helpers";

export async function simProfileRow(iid: string, e: SimEngine): Promise<ProfileRow> {
  const truth = (await http(`${e.url}/sim/truth`)).json.effective_coefficients as Record<string, number>;
  const version = (await http(`${e.url}/version`)).json.version as string;
  const start = processStartTime(parsePrometheusText((await http(`${e.url}/metrics`)).text))!;
  return {
    iid,
    ttft_a: truth.prefillA!,
    ttft_b: truth.prefillB!,
    ttft_c: truth.prefillC!,
    tpot_slope: truth.decodeKv!,
    tpot_intercept: truth.decodeBase!,
    tpot_request_slope: truth.decodeReq!,
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
