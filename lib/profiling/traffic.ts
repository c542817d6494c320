/**
 * The profile's traffic witness: what the engine served besides one sample, from its own counters
 * (lib/engine/reservation.ts), the profile's own completions counted by the client that sent them
 * (./counted-client.ts). One read closes a sample and opens the next: a sample's window runs from the
 * read that closed the one before it, so whatever the engine served in between counts against the next
 * sample (it was there, or had just been, when the sample ran), and the engine is read once per sample,
 * not twice. The profile's own completions between samples (its warm-ups) are counted as its own.
 */
import { witness, type EngineLoad } from "../engine/reservation";
import { settledLoad } from "../engine/settled-load";
import type { CountedClient } from "./counted-client";
import type { TrafficWitness } from "./resample";

/** A sample's closing read polls briskly: it runs between every two samples of a sweep. */
const SAMPLE_POLL_MS = 20;

export function trafficWitness(engineId: string, readLoad: () => Promise<EngineLoad>, client: CountedClient): TrafficWitness {
  let last: { load: EngineLoad; own: number } | undefined;
  return {
    async begin() {
      const opened = last ?? { load: await readLoad(), own: client.finished() };
      return async () => {
        const own = client.finished() - opened.own;
        const after = await settledLoad(readLoad, opened.load, { own }, { pollMs: SAMPLE_POLL_MS });
        last = { load: after, own: client.finished() };
        // A restart inside a sample is the profiler's own stop (its generation check), not traffic.
        return witness(engineId, opened.load, after, own).foreign;
      };
    },
  };
}
