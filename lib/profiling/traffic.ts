/**
 * The profile's traffic witness: what the engine served besides one sample, from its own counters read
 * just before the sample and just after it (lib/engine/reservation.ts), the sample's own completions
 * counted by the client that sent them (./counted-client.ts).
 */
import { witness, type EngineLoad } from "../engine/reservation";
import { settledLoad } from "../engine/settled-load";
import type { CountedClient } from "./counted-client";
import type { TrafficWitness } from "./resample";

/** A sample's closing read polls briskly: it runs between every two samples of a sweep. */
const SAMPLE_POLL_MS = 20;

export function trafficWitness(engineId: string, readLoad: () => Promise<EngineLoad>, client: CountedClient): TrafficWitness {
  return {
    async begin() {
      const before = await readLoad();
      const ownBefore = client.finished();
      return async () => {
        const own = client.finished() - ownBefore;
        const after = await settledLoad(readLoad, before, { own }, { pollMs: SAMPLE_POLL_MS });
        // A restart inside a sample is the profiler's own stop (its generation check), not traffic.
        return witness(engineId, before, after, own).foreign;
      };
    },
  };
}
