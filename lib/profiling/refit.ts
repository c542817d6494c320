/**
 * narwhal-profile `--refit-samples`: rebuilds every engine's TTFT curve from the raw prefill timings a
 * sidecar retained, keeping its decode fit, its generation binding and every raw observation. The
 * samples must cover exactly the fleet's engines. Messages are narwhal's (probe/offline.py).
 */
import { ProfileError } from "./errors";
import { fitPrefill, pct } from "./fit";
import { rowProblem, type ProfileRow } from "./store";

export interface Refitted {
  rows: ProfileRow[];
  /** The new sidecar: the source's, each entry's fit and profile replaced, the source named. */
  record: Record<string, unknown>;
  /** Per-engine progress lines, as narwhal prints them. */
  lines: string[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const stored = (msg: string) => new ProfileError("NARWHAL_PROFILE_STORE", msg);

/** Fields of a warm-prefix fit: a refit drops them with the old curve they were fitted against. */
const CACHED = /^cached_/;

/** narwhal writes every Profile field, unset ones as null; rows here omit them. */
export function normalisedRow(raw: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== null));
}

/** `record` is the parsed sidecar at `sourcePath`; `engineIds` the fleet's engines. */
export function refitSamples(record: unknown, sourcePath: string, engineIds: readonly string[]): Refitted {
  if (!isObject(record) || !isObject(record.engines)) throw stored(`invalid profile samples: ${sourcePath}`);
  const entries = record.engines;
  const fleet = new Set(engineIds);
  const saved = Object.keys(entries);
  if (saved.length !== fleet.size || saved.some((id) => !fleet.has(id))) throw stored("saved profile samples must cover every configured engine");
  const out = JSON.parse(JSON.stringify(record)) as Record<string, unknown>;
  const outEntries = out.engines as Record<string, Record<string, unknown>>;
  const rows: ProfileRow[] = [];
  const lines: string[] = [];
  for (const iid of [...fleet].sort()) {
    const entry = entries[iid];
    if (!isObject(entry) || !Array.isArray(entry.prefill)) throw stored(`${iid}: saved prefill samples are missing`);
    const samples = entry.prefill as unknown[];
    if (samples.some((p) => !Array.isArray(p) || p.length !== 2 || p.some((v) => typeof v !== "number"))) throw stored(`${iid}: saved prefill samples are invalid`);
    const old = isObject(entry.profile) ? normalisedRow(entry.profile) : undefined;
    const kept = old && Object.fromEntries(Object.entries(old).filter(([k]) => !CACHED.test(k)));
    if (!kept || rowProblem({ ...kept, ...(kept.generation_digest === undefined ? { generation_digest: "sha256:" + "0".repeat(64) } : {}) })) {
      throw stored(`${iid}: saved profile evidence is invalid`);
    }
    if (kept.iid !== iid) throw stored(`${iid}: saved profile identity differs from the fleet`);
    if (kept.generation_digest === undefined || !isObject(entry.generation_evidence)) throw stored(`${iid}: saved samples lack generation evidence; reprofile the engine`);
    const block = entry.prefill_block_tokens ?? null;
    if (block !== null && !(Number.isInteger(block) && (block as number) >= 1)) throw stored(`${iid}: saved prefill block size is invalid`);
    const cached = isObject(entry.cached_prefill) ? entry.cached_prefill : {};
    if (Array.isArray(cached.samples) && cached.samples.length && cached.reason == null) {
      // narwhal refits a warm-prefix fit from these; this program's rows carry none, so it would be lost.
      throw stored(`${iid}: saved samples hold a warm-prefix fit, which this program does not refit; use narwhal-profile --refit-samples`);
    }
    const fit = fitPrefill(samples as Array<[number, number]>, block as number | null);
    const { ttft_block_tokens: _b, ttft_split: _s, ...rest } = kept;
    const row = {
      ...rest,
      ttft_a: fit.a,
      ttft_b: fit.b,
      ttft_c: fit.c,
      ...(fit.split !== null && block !== null ? { ttft_block_tokens: block, ttft_split: fit.split } : {}),
    } as unknown as ProfileRow;
    const problem = rowProblem(row as unknown as Record<string, unknown>);
    if (problem) throw stored(problem);
    Object.assign(outEntries[iid], { prefill_fit_points: fit.representatives, prefill_fit_mape: fit.mape, profile: row });
    lines.push(`  ${iid}: prefill median fit MAPE ${pct(fit.mape)}`);
    rows.push(row);
  }
  out.method_version = 2;
  out.prefill_refit_source = sourcePath;
  return { rows, record: out, lines };
}
