/**
 * Whether a first-token calibration measured before this stack (`narwhal-check --calibrate-first-token
 * --calibration-out`, schema `narwhal.first-token-calibration` v1) is still valid evidence for the live
 * fleet: the bytes are the ones the program read (and the pinned ones, when pinned), it completed, it
 * was taken against this model, these engine addresses and every role-permitted directed path up to the
 * longest admitted input, and every process it sampled is the one serving now (same start time, same
 * generation digest by narwhal's rule). The file does not record runtime, KV transport or served
 * context; a process that has not restarted still runs the launch it was sampled under, and the live
 * context is held to the launch plan as a fresh measurement would. Every mismatch names its engine and
 * field, worded for the operator; the deadline comes from the raw attempts, not the file's summary.
 */
import { createHash } from "node:crypto";
import { attestationBindingDigest, identityGenerationDigest } from "../profiling/store";
import { calibrate, type CalibrationGroup, type CalibrationResult } from "./calibration";
import type { Pair } from "./pairs";

export const CALIBRATION_SCHEMA = "narwhal.first-token-calibration";

/** The file `calibration.adopt` names, with the digest of the bytes the program read and the operator's pin. */
export interface CalibrationAdoptSource {
  path: string;
  /** `sha256:<hex>` of the file when the program read it. */
  sha256: string;
  /** `sha256:<hex>` the operator pinned (`calibration.adopt.sha256`), when given. */
  pinned?: string;
}

/** One engine as the stack declares it and as it answers now. */
export interface AdoptEngine {
  engineId: string;
  /** The engine's URL in the fleet document the router loads. */
  url: string;
  /** The served context of its launch plan. */
  maxModelLen: number;
  attestationDigest?: string;
  launchDigest?: string;
  /** What the engine says now: `/version`, `process_start_time_seconds`, the served context. */
  live: { version: string | null; processStart: number | null; maxModelLen: number | null };
}

export interface AdoptExpectation {
  model: string;
  engines: AdoptEngine[];
  /** Every role-permitted directed path, as a fresh measurement would sample. */
  paths: Pair[];
  /** The configured minimum of completed samples per group. */
  samplesPerGroup: number;
  routerOverheadS: number;
  clientTtftS: number;
}

/** One binding that does not hold: which engine (when one), which field of the file, and why. */
export interface CalibrationMismatch {
  engine?: string;
  field: string;
  reason: string;
}

export interface AdoptedCalibration {
  result: CalibrationResult;
  /** The file's `captured_at_unix`, as ISO time: when the samples were taken. */
  capturedAt: string;
  samplesPerGroup: number;
  inputLengths: number[];
  observationBoundS: number;
  completed: number;
  processStarts: Record<string, number>;
}

export type CalibrationAdoption = { ok: true; adopted: AdoptedCalibration } | { ok: false; mismatches: CalibrationMismatch[] };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const show = (v: unknown) => (v === undefined ? "nothing" : JSON.stringify(v));
const key = (p: string, c: string, n: number) => `${p} -> ${c} at ${n}`;

export function sha256Of(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/** The digest narwhal records for an engine: the attestation binding with an engine contract, else the identity's. */
function expectedGeneration(e: AdoptEngine, contract: boolean): string | undefined {
  if (contract) return e.attestationDigest ? attestationBindingDigest(e.attestationDigest, e.launchDigest) : undefined;
  return e.live.version !== null && e.live.processStart !== null ? identityGenerationDigest(e.live.version, e.live.processStart) : undefined;
}

function engineMismatches(doc: Record<string, unknown>, x: AdoptExpectation): CalibrationMismatch[] {
  const out: CalibrationMismatch[] = [];
  const urls = isObject(doc.engine_urls) ? doc.engine_urls : {};
  const generations = isObject(doc.generations) ? doc.generations : {};
  const starts = isObject(doc.process_starts) ? doc.process_starts : {};
  const ours = new Set(x.engines.map((e) => e.engineId));
  for (const iid of Object.keys(urls).filter((k) => !ours.has(k))) out.push({ engine: iid, field: "engine_urls", reason: `${iid} was sampled but is not an engine of this fleet` });
  const contract = doc.contract_fingerprint !== null && doc.contract_fingerprint !== undefined;
  for (const e of x.engines) {
    const id = e.engineId;
    if (!(id in urls)) {
      out.push({ engine: id, field: "engine_urls", reason: `${id} was not sampled (no entry in engine_urls)` });
      continue;
    }
    if (urls[id] !== e.url) out.push({ engine: id, field: `engine_urls.${id}`, reason: `${id} was sampled at ${show(urls[id])}, the fleet document reaches it at ${e.url}` });
    if (e.live.maxModelLen !== e.maxModelLen) out.push({ engine: id, field: "maxModelLen", reason: `${id} serves a context of ${e.live.maxModelLen ?? "unknown"} tokens, its launch plan ${e.maxModelLen}` });
    if (starts[id] !== e.live.processStart) {
      out.push({ engine: id, field: `process_starts.${id}`, reason: `${id} was sampled in the process started at ${show(starts[id])}, the live process started at ${e.live.processStart ?? "unknown"} (restarted since)` });
    }
    const expected = expectedGeneration(e, contract);
    if (generations[id] !== expected) {
      const rule = contract ? "the attestation binding" : "the live identity (version, process start)";
      out.push({ engine: id, field: `generations.${id}`, reason: `${id} was sampled as generation ${show(generations[id])}, ${rule} gives ${expected ?? "nothing readable"}` });
    }
  }
  return out;
}

/** Completed timings per group, from the raw attempts. */
function groupsOf(attempts: unknown[], lengths: number[], paths: Pair[]): { groups: CalibrationGroup[]; problems: string[] } {
  const problems: string[] = [];
  const byKey = new Map<string, Array<Record<string, unknown>>>();
  for (const a of attempts) {
    if (!isObject(a) || typeof a.producer !== "string" || typeof a.consumer !== "string" || !Number.isInteger(a.target_input_tokens)) {
      problems.push("an attempt lacks its producer, consumer or target_input_tokens");
      continue;
    }
    const k = key(a.producer, a.consumer, a.target_input_tokens as number);
    byKey.set(k, [...(byKey.get(k) ?? []), a]);
  }
  const wanted = new Set(lengths.flatMap((n) => paths.map((p) => key(p.producer, p.consumer, n))));
  for (const k of byKey.keys()) if (!wanted.has(k)) problems.push(`attempts on ${k} tokens, which is not a role-permitted path of this fleet`);
  const groups = lengths.flatMap((inputTokens) =>
    paths.map((p) => {
      const rows = byKey.get(key(p.producer, p.consumer, inputTokens)) ?? [];
      const ok = rows.filter((r) => r.status === "completed" && finite(r.first_token_seconds) && (r.first_token_seconds) >= 0);
      return {
        producer: p.producer,
        consumer: p.consumer,
        inputTokens,
        firstTokenSeconds: ok.map((r) => r.first_token_seconds as number),
        prefillSeconds: ok.map((r) => (finite(r.prefill_seconds) ? r.prefill_seconds : 0)),
        failures: rows.filter((r) => !ok.includes(r)).map((r) => `attempt ${show(r.attempt)} ${show(r.status)}: ${String(r.error ?? "")}`),
      };
    }),
  );
  return { groups, problems };
}

/**
 * Decides adoption of the calibration in `bytes`. Never throws for a file that simply does not fit:
 * the mismatches say what differs, each naming its field and, where one is concerned, its engine.
 */
export function judgeCalibration(bytes: Uint8Array, source: CalibrationAdoptSource, x: AdoptExpectation): CalibrationAdoption {
  const no = (...mismatches: CalibrationMismatch[]): CalibrationAdoption => ({ ok: false, mismatches });
  const digest = sha256Of(bytes);
  if (digest !== source.sha256) return no({ field: "sha256", reason: `${source.path} changed since the program read it (${digest}, read as ${source.sha256})` });
  if (source.pinned !== undefined && digest !== source.pinned) return no({ field: "sha256", reason: `${source.path} is ${digest}, not the pinned ${source.pinned}` });
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch (err) {
    return no({ field: "schema", reason: `${source.path} is not JSON: ${(err as Error).message}` });
  }
  if (!isObject(doc) || doc.schema !== CALIBRATION_SCHEMA || doc.schema_version !== 1) {
    return no({ field: "schema", reason: `${source.path} is not a ${CALIBRATION_SCHEMA} v1 document (schema ${show(isObject(doc) ? doc.schema : undefined)}, version ${show(isObject(doc) ? doc.schema_version : undefined)})` });
  }
  const out: CalibrationMismatch[] = [];
  if (doc.status !== "complete") out.push({ field: "status", reason: `the calibration is ${show(doc.status)}, not "complete" (failed, expired or too few samples)` });
  for (const f of ["changed_generations", "generation_errors"] as const) {
    if (!Array.isArray(doc[f]) || (doc[f] as unknown[]).length) out.push({ field: f, reason: `${f} is ${show(doc[f])}: engines changed or could not be read while it was sampled` });
  }
  if (doc.model !== x.model) out.push({ field: "model", reason: `it was taken against model ${show(doc.model)}, the fleet serves ${JSON.stringify(x.model)}` });
  out.push(...engineMismatches(doc, x));

  const lengths = Array.isArray(doc.input_tokens) && doc.input_tokens.length && doc.input_tokens.every((n) => Number.isInteger(n) && n >= 1) ? (doc.input_tokens as number[]) : undefined;
  const context = Math.min(...x.engines.map((e) => e.maxModelLen));
  if (!lengths) out.push({ field: "input_tokens", reason: `input_tokens is ${show(doc.input_tokens)}, not a list of input lengths` });
  else if (!lengths.includes(context - 1)) out.push({ field: "input_tokens", reason: `input_tokens [${lengths.join(", ")}] do not include the longest admitted input ${context - 1} of the served context ${context}` });
  const perGroup = doc.samples_per_group;
  const minimum = x.samplesPerGroup;
  if (!Number.isInteger(perGroup) || (perGroup as number) < minimum) out.push({ field: "samples_per_group", reason: `samples_per_group is ${show(perGroup)}, at least ${minimum} required` });
  if (!Array.isArray(doc.attempts)) out.push({ field: "attempts", reason: "the raw attempts are missing" });
  if (!finite(doc.captured_at_unix) || doc.captured_at_unix <= 0) out.push({ field: "captured_at_unix", reason: `captured_at_unix is ${show(doc.captured_at_unix)}, not a capture time` });
  if (!finite(doc.observation_timeout_s)) out.push({ field: "observation_timeout_s", reason: `observation_timeout_s is ${show(doc.observation_timeout_s)}` });
  if (out.length || !lengths || !Array.isArray(doc.attempts)) return no(...out);

  const { groups, problems } = groupsOf(doc.attempts, lengths, x.paths);
  for (const p of problems) out.push({ field: "attempts", reason: p });
  for (const g of groups) {
    if (g.firstTokenSeconds.length < (perGroup as number) || g.failures.length) {
      out.push({ field: "attempts", reason: `${key(g.producer, g.consumer, g.inputTokens)} tokens has ${g.firstTokenSeconds.length} completed and ${g.failures.length} failed attempts, ${perGroup as number} completed and none failed required` });
    }
  }
  if (out.length) return no(...out);
  const result = calibrate(groups, { routerOverheadS: x.routerOverheadS, clientTtftS: x.clientTtftS, minSamples: perGroup as number });
  if (!finite(doc.candidate_deadline_s) || Math.abs(doc.candidate_deadline_s - result.floor) > 1e-9) {
    return no({ field: "candidate_deadline_s", reason: `candidate_deadline_s ${show(doc.candidate_deadline_s)} is not the ${result.floor} its raw attempts give` });
  }
  return {
    ok: true,
    adopted: {
      result,
      capturedAt: new Date((doc.captured_at_unix as number) * 1000).toISOString(),
      samplesPerGroup: perGroup as number,
      inputLengths: lengths,
      observationBoundS: doc.observation_timeout_s as number,
      completed: groups.reduce((n, g) => n + g.firstTokenSeconds.length, 0),
      processStarts: doc.process_starts as Record<string, number>,
    },
  };
}

/** The mismatches as one line for a log or an error. */
export function describeMismatches(ms: readonly CalibrationMismatch[]): string {
  return ms.map((m) => m.reason).join("; ");
}
