/**
 * Whether a profile measured before this stack (a store and its `.samples.json` sidecar, as
 * narwhal-profile or this program writes them) is still valid evidence for one live engine: the file
 * bytes are the ones the program read, the engine's row binds the engine's live generation by the same
 * digest rule as a fresh measurement, and the sidecar's entry describes that row and that generation.
 * Anything else is a reason to measure afresh, worded for the operator.
 */
import { ProfileError } from "./errors";
import { splitsPrefill } from "./fit";
import { attestationBindingDigest, identityGenerationDigest, rowProblem, sha256Hex, STORE_SCHEMA, type ProfileRow } from "./store";
import type { Sweep } from "./sweep";

/** The store and sidecar the stack config names, with the digests the program read. */
export interface AdoptSource {
  storePath: string;
  /** `sha256:<hex>` of the store bytes when the program read them. */
  storeSha256: string;
  samplesPath: string;
  samplesSha256: string;
}

export interface Adopted {
  row: ProfileRow;
  /** The sidecar entry, its `profile` the adopted row (what the store resource republishes). */
  entry: Record<string, unknown>;
  maxModelLen: number;
  sweep: Sweep;
  fitErrors: { prefillMape: number; prefillWorstPoint: number; decodeFitMape: number; decodeCvMape: number };
  /** When and by what the store was written (its `meta`), for the evidence record. */
  meta: Record<string, unknown>;
}

export type Adoption = { ok: true; adopted: Adopted } | { ok: false; reason: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
/** Row fields this program's store does not carry; a row using them is measured afresh. */
const UNSUPPORTED = /^(colocated_|cached_)/;

/** narwhal writes every Profile field, unset ones as null; this program's rows omit them. */
function normalisedRow(raw: Record<string, unknown>): { row?: ProfileRow; problem?: string } {
  const kept = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== null));
  const unsupported = Object.keys(kept).filter((k) => UNSUPPORTED.test(k));
  if (unsupported.length) return { problem: `its row uses ${unsupported.sort().join(", ")}, which this program's store does not carry (shared-device or warm-prefix fits)` };
  const problem = rowProblem(kept);
  return problem ? { problem } : { row: kept as unknown as ProfileRow };
}

/** Key order does not make two rows different. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (isObject(v)) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  return JSON.stringify(v);
}

/** The binding digest the sidecar's generation evidence records, by the rule the row was bound with. */
function evidenceDigest(evidence: unknown): string | undefined {
  if (!isObject(evidence)) return undefined;
  if (typeof evidence.attestation_digest === "string") return attestationBindingDigest(evidence.attestation_digest, typeof evidence.launch_digest === "string" ? evidence.launch_digest : null);
  const engine = evidence.engine;
  if (isObject(engine) && typeof engine.version === "string" && typeof engine.process_start_time_seconds === "number") {
    return identityGenerationDigest(engine.version, engine.process_start_time_seconds);
  }
  return undefined;
}

function parse(bytes: Uint8Array, what: string): unknown {
  try {
    return JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch (err) {
    throw new ProfileError("NARWHAL_PROFILE_STORE", `${what} is not JSON: ${(err as Error).message}`);
  }
}

const numbers = (v: unknown): number[] | undefined => (Array.isArray(v) && v.every((x) => typeof x === "number") ? (v) : undefined);

function sweepOf(raw: unknown): Sweep | undefined {
  if (!isObject(raw)) return undefined;
  const s = { prefillLens: numbers(raw.prefill_lens), decodeInputLens: numbers(raw.decode_input_lens), decodeConcurrency: numbers(raw.decode_concurrency), decodeTokens: raw.decode_tokens, prefillRepeats: raw.prefill_repeats, decodeRepeats: raw.decode_repeats };
  return Object.values(s).every((v) => v !== undefined) ? (s as Sweep) : undefined;
}

/** The worst relative error of the row's prefill curve at the sidecar's fit points. */
function worstPrefillPoint(row: ProfileRow, points: unknown): number {
  const pts = Array.isArray(points) ? points.filter((p): p is [number, number] => Array.isArray(p) && typeof p[0] === "number" && typeof p[1] === "number" && p[1] > 0) : [];
  const block = row.ttft_block_tokens ?? null;
  const errors = pts.map(([n, t]) => Math.abs(row.ttft_a * n * n + row.ttft_b * n + row.ttft_c + (splitsPrefill(n, block) ? (row.ttft_split ?? 0) : 0) - t) / t);
  return errors.length ? Math.max(...errors) : 0;
}

/**
 * Decides adoption for `engineId` whose live generation binds `bindingDigest`. Never throws for a
 * store that simply does not fit: the reason says what differs.
 */
export function adoptionFor(engineId: string, bindingDigest: string, source: AdoptSource, storeBytes: Uint8Array, samplesBytes: Uint8Array): Adoption {
  const no = (reason: string): Adoption => ({ ok: false, reason });
  const storeDigest = `sha256:${sha256Hex(storeBytes)}`;
  const samplesDigest = `sha256:${sha256Hex(samplesBytes)}`;
  if (storeDigest !== source.storeSha256) return no(`${source.storePath} changed since the program read it (${storeDigest}, read as ${source.storeSha256})`);
  if (samplesDigest !== source.samplesSha256) return no(`${source.samplesPath} changed since the program read it (${samplesDigest}, read as ${source.samplesSha256})`);
  let store: unknown;
  let samples: unknown;
  try {
    store = parse(storeBytes, source.storePath);
    samples = parse(samplesBytes, source.samplesPath);
  } catch (err) {
    return no((err as Error).message);
  }
  if (!isObject(store) || store.schema !== STORE_SCHEMA || !Array.isArray(store.profiles)) return no(`${source.storePath} is not a ${STORE_SCHEMA} document`);
  const rows = store.profiles.filter((r): r is Record<string, unknown> => isObject(r) && r.iid === engineId);
  if (rows.length === 0) return no(`${source.storePath} has no row for engine ${engineId}`);
  if (rows.length > 1) return no(`${source.storePath} has ${rows.length} rows for engine ${engineId} (role-mix variants), which this program does not adopt`);
  const { row, problem } = normalisedRow(rows[0]);
  if (!row) return no(`${source.storePath}: ${problem}`);
  if (row.generation_digest !== bindingDigest) {
    return no(`its row binds generation ${row.generation_digest}, the live engine binds ${bindingDigest} (restarted or relaunched since it was measured)`);
  }
  const entry = isObject(samples) && isObject(samples.engines) ? samples.engines[engineId] : undefined;
  if (!isObject(entry)) return no(`${source.samplesPath} has no entry for engine ${engineId}: the row has no raw observations behind it`);
  const described = isObject(entry.profile) ? normalisedRow(entry.profile).row : undefined;
  if (!described || canonical(described) !== canonical(row)) return no(`${source.samplesPath}'s entry for ${engineId} describes another profile than the store's row`);
  const recorded = evidenceDigest(entry.generation_evidence);
  if (recorded !== bindingDigest) return no(`${source.samplesPath}'s generation evidence for ${engineId} binds ${recorded ?? "nothing readable"}, not the live ${bindingDigest}`);
  const maxModelLen = entry.max_model_len;
  const sweep = sweepOf(entry.sweep);
  if (typeof maxModelLen !== "number" || !sweep) return no(`${source.samplesPath}'s entry for ${engineId} lacks max_model_len or its sweep`);
  return {
    ok: true,
    adopted: {
      row,
      entry: { ...entry, profile: row },
      maxModelLen,
      sweep,
      fitErrors: {
        prefillMape: typeof entry.prefill_fit_mape === "number" ? entry.prefill_fit_mape : 0,
        prefillWorstPoint: worstPrefillPoint(row, entry.prefill_fit_points),
        decodeFitMape: row.decode_fit_mape,
        decodeCvMape: row.decode_cv_mape,
      },
      meta: isObject(store.meta) ? store.meta : {},
    },
  };
}
