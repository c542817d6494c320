/**
 * When each engine's live process started (`process_start_time_seconds` from `/metrics`): the cheap
 * observation both the peer wave and a generation's peer check rest on. Runs inside provider calls.
 */
import type { ProcessIdentity } from "../../lib/engine/generation";
import { processStartFrom } from "../../lib/engine/generation";
import { withEngineHttp } from "../engine-generation/http";

/** A refresh must not hang on one engine: each observation is bounded. */
export const OBSERVE_TIMEOUT_S = 10;

export interface Observed {
  readonly engineId: string;
  readonly hostAlias: string;
  readonly url: string;
  readonly processIdentity: ProcessIdentity;
}

/** One start time per engine; `null` when the engine did not answer (its own proof reports why). */
export async function observeStarts(engines: readonly Observed[], apiKey: string | undefined): Promise<Record<string, number | null>> {
  const starts = await Promise.all(
    engines.map((e) =>
      withEngineHttp(e, apiKey, async (ask) => processStartFrom(e, await ask("/metrics")), OBSERVE_TIMEOUT_S).catch(() => null),
    ),
  );
  return Object.fromEntries(engines.map((e, i) => [e.engineId, starts[i]!]));
}
