/**
 * The edge's reservation, proved around its measurement (lib/fabric/edge-reservation.ts): every engine on
 * the edge's two hosts has its `/metrics` read through the edge's own SSH session to that host, just
 * before the measurement and just after it. vLLM serves `/metrics` without the API key.
 */
import { loadOf } from "../../lib/engine/reservation";
import { edgeReservation, metricsTarget, type EdgeHostEngine, type EdgeReservation, type EngineRead } from "../../lib/fabric/edge-reservation";
import type { RecordedSession } from "../../lib/ssh/recorded-session";
import { forwardedGet } from "../../lib/ssh/forwarded-get";

/** Bounded, named so a slow engine says which wait it outran; a read that fails leaves the engine unproved, never the edge unmeasured. */
export const ENGINE_METRICS_TIMEOUT_S = 10;

async function readOne(e: EdgeHostEngine, session: RecordedSession): Promise<EngineRead> {
  try {
    const reply = await forwardedGet(session.ssh, metricsTarget(e.url), { timeoutS: ENGINE_METRICS_TIMEOUT_S, timeoutName: "ENGINE_METRICS_TIMEOUT_S", name: `engine ${e.engineId} GET /metrics` });
    if (reply.status !== 200) return { ok: false, problem: `GET /metrics answered HTTP ${reply.status}` };
    return { ok: true, load: loadOf(reply.text, `engine ${e.engineId} at ${e.url}`) };
  } catch (err) {
    return { ok: false, problem: (err as Error).message };
  }
}

const readAll = (engines: ReadonlyArray<EdgeHostEngine>, src: RecordedSession, dst: RecordedSession) =>
  Promise.all(engines.map((e) => readOne(e, e.side === "source" ? src : dst)));

/** Runs `measure` between two reads of every engine's counters; the reservation goes with its result. */
export async function withReservation<T>(
  engines: ReadonlyArray<EdgeHostEngine>,
  src: RecordedSession,
  dst: RecordedSession,
  measure: () => Promise<T>,
): Promise<{ run: T; reservation: EdgeReservation }> {
  const before = await readAll(engines, src, dst);
  const run = await measure();
  const after = await readAll(engines, src, dst);
  return { run, reservation: edgeReservation(engines.map((engine, k) => ({ engine, before: before[k], after: after[k] }))) };
}
