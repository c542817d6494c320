/**
 * What the Profile provider makes of one engine's sweep or adopted row: the generation the row binds,
 * the store row and sidecar entry built from a measurement, and the result create returns.
 */
import { sha256Json } from "../digest";
import { adoptionFor, type AdoptSource } from "./adopt";
import { adoptionLimitReason, type FitLimits } from "./fit-limits";
import { measuredRow, type MeasureRecord, type Measurement } from "./measure";
import { attestationBindingDigest, identityGenerationDigest, type EngineSamples, type ProfileRow } from "./store";
import type { Sweep } from "./sweep";
import type { ResampledFigures } from "./resample";
import type { Reservation } from "../engine/reservation";

/** How create came by the row: adopted from an earlier store, or measured (and, with `adopt` set, why). */
export interface ProfileAdoption {
  verdict: "adopted" | "measured";
  reason: string;
  source?: AdoptSource;
}

export interface ProfileFitErrors {
  prefillMape: number;
  prefillWorstPoint: number;
  decodeFitMape: number;
  decodeCvMape: number;
}

/** One sweep of a create: its fit errors, what the limits found wrong (nothing for the accepted one) and its record. */
export interface ProfileFitTry {
  attempt: number;
  fitErrors: ProfileFitErrors;
  problems: string[];
  /** The samples the sweep took again while the timing host was disturbed, and that host's contention. */
  resampled?: ResampledFigures;
  /** Whether the engine served nothing but this sweep during it (lib/engine/reservation.ts). */
  reserved?: boolean;
  evidence?: { relativePath: string; digest: string };
}

/** What create measured: never rewritten. */
export interface ProfileResult {
  /** The store row, bound to `bindingDigest`. */
  row: ProfileRow;
  /** sha256 over the row's canonical JSON: what the store and preflight bind. */
  profileDigest: string;
  bindingDigest: string;
  fitErrors: ProfileFitErrors;
  maxModelLen: number;
  /** The engine's sweep after its bounds. */
  effectiveSweep: Sweep;
  /** The sidecar entry (raw observations, fit, generation evidence) as an evidence artifact. */
  samples: { relativePath: string; sha256: string };
  evidence?: { relativePath: string; digest: string };
  measuredAt: string;
  wallSeconds: number;
  /** Every sweep create took (a fit over the preflight's limits is measured again), in order, the accepted one last, each with its evidence; empty when the row was adopted. */
  fitTries: ProfileFitTry[];
  /** Set when `adopt` was given: whether the row was adopted or measured, and why. */
  adoption?: ProfileAdoption;
  /** The accepted sweep's reservation: whether the engine served anything else during it; absent when adopted. */
  reservation?: Reservation;
}

/** The engine a row is measured on, as the Profile's inputs name it. */
export interface ProfiledEngine {
  engineId: string;
  version: string;
  processStartTime: number;
  generationDigest: string;
  attestationDigest?: string | null;
  launchDigest?: string | null;
  maxNumSeqs?: number;
}

/** The digest a row binds (the verified attestation, else the live process identity) and the evidence for it. */
export function bindingOf(i: ProfiledEngine): { digest: string; evidence: Record<string, unknown> } {
  const engine = { version: i.version, process_start_time_seconds: i.processStartTime };
  if (i.attestationDigest) {
    return {
      digest: attestationBindingDigest(i.attestationDigest, i.launchDigest),
      evidence: { attestation_digest: i.attestationDigest, ...(i.launchDigest ? { launch_digest: i.launchDigest } : {}), generation_digest: i.generationDigest, engine },
    };
  }
  return { digest: identityGenerationDigest(i.version, i.processStartTime), evidence: { engine } };
}

/** One sweep's store row, its sidecar entry (`engine-samples.json`, warm-up kept beside it) and its fit errors. */
export function sweptRow(i: ProfiledEngine, binding: ReturnType<typeof bindingOf>, m: Measurement, raw: MeasureRecord) {
  const row: ProfileRow = measuredRow(i.engineId, binding.digest, m, raw);
  const entry: EngineSamples = {
    max_model_len: m.maxModelLen,
    sweep: raw.sweep!,
    ...(i.maxNumSeqs !== undefined ? { max_num_seqs: i.maxNumSeqs } : {}),
    generation_evidence: binding.evidence,
    prefill: raw.prefill,
    prefill_fit_points: m.prefill.representatives,
    prefill_fit_mape: m.prefill.mape,
    prefill_block_tokens: m.blockTokens,
    decode: raw.decode,
    decode_intervals: raw.decode_intervals,
    prefix_cache_hit_tokens: raw.prefix_cache_hit_tokens ?? null,
    profile: row,
  };
  const fitErrors: ProfileFitErrors = { prefillMape: m.prefill.mape, prefillWorstPoint: m.prefill.worst, decodeFitMape: m.decodeFitMape, decodeCvMape: m.decodeCvMape! };
  return { row, entry: { ...entry, warm_up: raw.warm_up }, fitErrors };
}

/** The result create returns for a row, measured or adopted; `samples` is the kept sidecar entry, or its digest when nothing was kept. */
export function profileResult(
  r: Pick<ProfileResult, "row" | "bindingDigest" | "fitErrors" | "maxModelLen" | "effectiveSweep" | "measuredAt" | "wallSeconds" | "fitTries" | "adoption" | "reservation">,
  entry: unknown,
  kept: { artifact: ProfileResult["samples"]; evidence: NonNullable<ProfileResult["evidence"]> } | undefined,
): ProfileResult {
  const { adoption, ...rest } = r;
  return {
    ...rest,
    profileDigest: sha256Json(r.row),
    samples: kept?.artifact ?? { relativePath: "", sha256: sha256Json(entry) },
    ...(kept ? { evidence: kept.evidence } : {}),
    ...(adoption ? { adoption } : {}),
  };
}

/**
 * The engine's row from a store measured before this stack, when it binds the live generation and passes
 * the same limits as a measured row (else the engine is measured instead): the result's facts, the sidecar
 * entry and what the record observes; or why not. The measurement happened when the store was written, not now.
 */
export function adoptedProfile(engineId: string, bindingDigest: string, source: AdoptSource, read: { store: Uint8Array; samples: Uint8Array; writtenAt: string }, limits: FitLimits) {
  const decision = adoptionFor(engineId, bindingDigest, source, read.store, read.samples);
  if (!decision.ok) return { reason: decision.reason };
  const a = decision.adopted;
  const overLimits = adoptionLimitReason(a.row, limits, source.storePath);
  if (overLimits) return { reason: overLimits };
  const reason = `row of ${source.storePath} binds the live generation ${bindingDigest}`;
  const observations = { adopted: { ...source, storeMeta: a.meta, storeWrittenAt: read.writtenAt, reason }, row: a.row, fitErrors: a.fitErrors, maxModelLen: a.maxModelLen };
  const adoption: ProfileAdoption = { verdict: "adopted", reason, source };
  const facts = { row: a.row, bindingDigest, fitErrors: a.fitErrors, maxModelLen: a.maxModelLen, effectiveSweep: a.sweep, measuredAt: read.writtenAt, wallSeconds: 0, fitTries: [], adoption };
  return { facts, entry: a.entry, observations };
}
