/**
 * The profile's traffic witness: what the engine served besides one sample, from its own counters
 * (lib/engine/reservation.ts), the profile's own completions counted by the client that sent them
 * (./counted-client.ts). One read closes a sample and opens the next: a sample's window runs from the
 * read that closed the one before it, so whatever the engine served in between counts against the next
 * sample (it was there, or had just been, when the sample ran), and the engine is read once per sample,
 * not twice. The profile's own completions between samples (its warm-ups) are counted as its own.
 *
 * Before a shared sample is taken again, the witness waits for the engine to serve nobody else: a
 * serving router keeps a restarted engine in placement until its next process-identity check (narwhal's
 * liveness sweep, every `recovery.liveness_every` monitor passes, 10 s by default), then takes it out
 * until it is profiled again. The wait has one bound for the whole sweep, so an engine the router keeps
 * serving costs the sweep that bound once and its samples are re-taken as before.
 */
import { witness, type EngineLoad } from "../engine/reservation";
import { realClock, settledLoad, type SettleClock } from "../engine/settled-load";
import type { CountedClient } from "./counted-client";
import type { TrafficWitness } from "./resample";

/** A sample's closing read polls briskly: it runs between every two samples of a sweep. */
const SAMPLE_POLL_MS = 20;
/** How long one sweep may wait, in all, for its engine to serve nobody else: two of narwhal's default liveness sweeps and then some. */
export const QUIET_BUDGET_S = 30;
/** The engine serves nobody else once it finished nothing and held nothing for this long. */
export const QUIET_SPAN_MS = 1000;
const QUIET_POLL_MS = 200;

export function trafficWitness(engineId: string, readLoad: () => Promise<EngineLoad>, client: CountedClient, clock: SettleClock = realClock): TrafficWitness {
  let last: { load: EngineLoad; own: number } | undefined;
  let quietLeftMs = QUIET_BUDGET_S * 1000;
  return {
    async begin() {
      const opened = last ?? { load: await readLoad(), own: client.finished() };
      return async () => {
        const own = client.finished() - opened.own;
        const after = await settledLoad(readLoad, opened.load, { own }, { pollMs: SAMPLE_POLL_MS, clock });
        last = { load: after, own: client.finished() };
        // A restart inside a sample is the profiler's own stop (its generation check), not traffic.
        return witness(engineId, opened.load, after, own).foreign;
      };
    },
    async quiet() {
      const started = clock.now();
      let load = await readLoad();
      let quietSince = load.inFlight === 0 ? started : null;
      while (clock.now() - started < quietLeftMs && (quietSince === null || clock.now() - quietSince < QUIET_SPAN_MS)) {
        await clock.sleep(QUIET_POLL_MS);
        const was = load;
        load = await readLoad();
        const served = load.finished !== was.finished || load.processStart !== was.processStart;
        if (load.inFlight > 0) quietSince = null;
        else if (served || quietSince === null) quietSince = clock.now();
      }
      // The next sample's window opens here: what the engine served while the sweep waited is nobody's sample.
      last = { load, own: client.finished() };
      const waited = clock.now() - started;
      quietLeftMs = Math.max(0, quietLeftMs - waited);
      return waited;
    },
  };
}
