/**
 * A sweep's reservation: whether the samples its fits rest on had the engine to themselves. The window
 * over the whole sweep (lib/engine/reservation.ts) says what the engine served besides it; with a traffic
 * witness per sample, a sample it shared was taken again once the engine served nobody else, within a
 * bound (./resample.ts, ./traffic.ts), so the sweep is reserved when no kept sample was shared, whatever
 * the window saw between samples or in a re-taken one.
 */
import { reservationOf, type EngineWitness, type Reservation } from "../engine/reservation";
import type { ResampleSummary } from "./resample";

export interface SweepReservation extends Reservation {
  /** With a per-sample witness: samples first taken beside other requests, those kept so, and the seconds the sweep waited for its engine to serve nobody else. */
  samples?: { shared: number; keptShared: number; kept: number; quietWaitS: number };
}

export function sweepReservation(window: EngineWitness, resampled: ResampleSummary | undefined): SweepReservation {
  if (resampled?.keptShared === undefined) return reservationOf([window]);
  const { shared = 0, keptShared, samples: kept, quietWaitS = 0 } = resampled;
  const samples = { shared, keptShared, kept, quietWaitS };
  if (window.restarted) return { ...reservationOf([window]), samples };
  const reasons = keptShared
    ? [
        `engine ${window.engine}: ${keptShared} of the ${kept} samples its fits rest on shared it with other requests (${window.foreign} besides the sweep's ${window.own} over the sweep; re-takes ran out, ${quietWaitS} s waited for it to serve nobody else): it was not reserved, so its figures are not the runbook's idle figures`,
      ]
    : [];
  return { idle: reasons.length === 0, engines: [window], reasons, samples };
}
