/**
 * What the Calibration provider makes of a run or an adopted file: why the engines' identities spoil
 * the samples, what the record observes, the figures create returns, and the client TTFT re-judged.
 */
import type { AdoptedCalibration, CalibrationAdoptSource, CalibrationMismatch } from "./calibration-adopt";
import { clientTtftFit, type CalibrationResult } from "./calibration";
import type { CalibrationRun } from "./calibration-run";
import type { Reservation } from "../engine/reservation";

/** What an engine says about itself: the served context and the live process identity. */
export interface EngineIdentity {
  readonly iid: string;
  readonly maxModelLen: number | null;
  readonly version: string | null;
  readonly processStart: number | null;
}

/** How create came by the deadline: adopted from an earlier calibration, or measured (and, with `adopt` set, why). */
export interface CalibrationAdoptionOutcome {
  verdict: "adopted" | "measured";
  source: CalibrationAdoptSource;
  /** Every binding of the file that did not hold, each naming its field and engine; empty when adopted. */
  mismatches: CalibrationMismatch[];
  /** When the adopted samples were taken (the file's capture time). */
  capturedAt?: string;
}

/** Why the engines cannot be calibrated as declared, or why the run's samples do not belong together. */
export function identityProblems(engines: ReadonlyArray<{ engineId: string; maxModelLen: number }>, before: readonly EngineIdentity[], after: readonly EngineIdentity[]): string[] {
  const problems: string[] = [];
  for (const b of before) {
    const declared = engines.find((e) => e.engineId === b.iid)!.maxModelLen;
    if (b.maxModelLen !== declared) problems.push(`${b.iid} serves a context of ${b.maxModelLen ?? "unknown"} tokens, its launch plan ${declared}`);
    const a = after.find((x) => x.iid === b.iid);
    if (a && (a.processStart !== b.processStart || a.version !== b.version)) problems.push(`${b.iid} changed process during calibration (start ${b.processStart} -> ${a.processStart}); its samples mix generations`);
  }
  return problems;
}

/**
 * How the record's figures came about: sampled now (with whether the engines served anything else
 * meanwhile, once samples were taken), or adopted from an earlier calibration file.
 */
export type CalibrationOrigin = { run: CalibrationRun | undefined; adoption?: CalibrationAdoptionOutcome; reservation?: Reservation } | { adopted: AdoptedCalibration; adoption: CalibrationAdoptionOutcome; bytes: Buffer };

/** The record's observations: the result, where an adopted one came from (or why a file was not adopted), the sampled engines' reservation, and every failed attempt. */
export function calibrationObservations(origin: CalibrationOrigin, result: CalibrationResult | undefined) {
  const run = "run" in origin ? origin.run : undefined;
  const { source } = origin.adoption ?? {};
  const adopted =
    "adopted" in origin && source
      ? { adopted: { path: source.path, sha256: source.sha256, ...(source.pinned ? { pinned: source.pinned } : {}), capturedAt: origin.adopted.capturedAt, sampledUnderBoundS: origin.adopted.observationBoundS, inputLengths: origin.adopted.inputLengths, samplesPerGroup: origin.adopted.samplesPerGroup } }
      : {};
  const refused = "run" in origin && origin.adoption ? { notAdopted: { path: origin.adoption.source.path, sha256: origin.adoption.source.sha256, mismatches: origin.adoption.mismatches } } : {};
  const failures = run?.groups.flatMap((g) => g.failures.map((f) => `${g.producer} -> ${g.consumer} at ${g.inputTokens}: ${f}`)) ?? [];
  const reservation = "run" in origin && origin.reservation ? { reservation: origin.reservation } : {};
  return { result: result ?? null, ...adopted, ...refused, ...reservation, incomplete: run?.incomplete ?? [], failures };
}

/** The result's figures as create returns them. */
export const calibrationFigures = (result: CalibrationResult) => ({
  groups: result.groups.map((g) => ({ ...g })),
  floorS: result.floor,
  deadlineS: result.deadline,
  prefillS: result.prefillS,
  clientTtftS: result.clientTtft,
  fitsClientTtft: result.fitsClientTtft,
});

/** The client TTFT requirement a fleet document states (`slo.ttft_s`), when it states one. */
export function clientTtftRequirement(doc: Record<string, unknown>): number | undefined {
  const v = (doc.slo as Record<string, unknown> | undefined)?.ttft_s;
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

/** An SLO or router-overhead edit re-judges the fit from the kept deadline and prefill; nothing is sampled again. */
export function ttftRejudged(kept: { deadlineS: number; prefillS: number; clientTtftRequirementS: number }, doc: Record<string, unknown>, routerOverheadS: number) {
  const requirement = clientTtftRequirement(doc) ?? kept.clientTtftRequirementS;
  const fit = clientTtftFit(kept.deadlineS, kept.prefillS, routerOverheadS, requirement);
  return { clientTtftRequirementS: requirement, clientTtftS: fit.clientTtft, fitsClientTtft: fit.fitsClientTtft };
}
