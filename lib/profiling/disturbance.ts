/**
 * A decode cohort disturbed by the machine rather than the engine. An engine's decode step hands every
 * stream one token, so a stream's gaps are even; when a process on the path is starved of CPU (the
 * engine's, the profiler's, or the forward between them) the tokens it held back arrive together, a gap
 * near zero after a long one. The mean gap still adds up to the stream's time, but that time is the
 * machine's stall, and a fit over such points describes the load beside the engine, not the engine.
 *
 * So a cohort whose streams arrive in bursts is measured again, within a budget per sweep; the cohorts
 * set aside are kept as evidence. Once the budget is spent the cohort is used as measured, and the fit
 * limits judge the sweep as before.
 */
import type { Interval } from "./cohort";

/** A gap this far under the cohort's mean gap is a token delivered with the one before it. */
export const BURST_GAP_FRACTION = 0.25;
/**
 * The share of burst gaps above which a cohort is disturbed. Cohorts on a quiet machine show at most 3%
 * (one gap in thirty); cohorts measured beside two busy test lanes on two cores showed 10% to 34%.
 */
export const DISTURBED_BURST_SHARE = 0.1;
/** Cohorts one sweep may measure again; a sweep has decodeInputLens x decodeConcurrency x decodeRepeats. */
export const DECODE_RESAMPLE_BUDGET = 8;

/** The share of a cohort's gaps that are bursts: under {@link BURST_GAP_FRACTION} of its mean gap. */
export function burstShare(intervals: readonly Interval[]): number {
  if (intervals.length === 0) return 0;
  const mean = intervals.reduce((sum, i) => sum + i[2], 0) / intervals.length;
  return intervals.filter((i) => i[2] < BURST_GAP_FRACTION * mean).length / intervals.length;
}

/** Whether the cohort's token delivery says the machine, not the engine, set its pace. */
export function disturbedByMachine(intervals: readonly Interval[]): boolean {
  return burstShare(intervals) > DISTURBED_BURST_SHARE;
}
