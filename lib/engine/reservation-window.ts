/**
 * A probe's reservation over its engines (lib/engine/reservation.ts), from reads the probe makes through
 * its own routes: each engine's load just before its first request and, settled (settled-load.ts), just
 * after its last, against the requests of its own each engine finished. An engine whose `/metrics`
 * cannot be read at either edge is not proved idle: the probe goes on, and its reason names the engine.
 */
import { reservationOf, witness, type EngineLoad, type EngineWitness, type Reservation } from "./reservation";
import { settledLoad, type OwnRequests, type SettleOptions } from "./settled-load";

/** One engine's load through the probe's route to it; throws when `/metrics` cannot be read. */
export type LoadReader = (engine: string) => Promise<EngineLoad>;

/** Each engine's load at the window's start, or why it could not be read. */
export type WindowStart = ReadonlyArray<{ engine: string; load?: EngineLoad; unread?: string }>;

const messageOf = (err: unknown) => (err as Error)?.message ?? String(err);

const unreadReason = (engine: string, when: "before" | "after", why: string) => `engine ${engine}'s /metrics could not be read ${when} the probe (${why}): whether it served anything besides the probe is unknown`;

/** Every engine's load, read side by side just before the probe's first request. */
export async function windowStart(engines: readonly string[], read: LoadReader): Promise<WindowStart> {
  return Promise.all(
    engines.map(async (engine) => {
      try {
        return { engine, load: await read(engine) };
      } catch (err) {
        return { engine, unread: messageOf(err) };
      }
    }),
  );
}

/**
 * The reservation once the probe's last request is answered: each engine read again until it settles,
 * `requests(engine)` being the probe's requests that engine finished (answered in full) and those the
 * probe gave up on there.
 */
export async function windowReservation(start: WindowStart, read: LoadReader, requests: (engine: string) => OwnRequests, settle: SettleOptions = {}): Promise<Reservation> {
  const ends = await Promise.all(
    start.map(async ({ engine, load, unread }): Promise<{ witness?: EngineWitness; reason?: string }> => {
      if (!load) return { reason: unreadReason(engine, "before", unread ?? "no read") };
      try {
        const own = requests(engine);
        const after = await settledLoad(() => read(engine), load, own, settle);
        return { witness: witness(engine, load, after, own.own) };
      } catch (err) {
        return { reason: unreadReason(engine, "after", messageOf(err)) };
      }
    }),
  );
  const proved = reservationOf(ends.flatMap((e) => (e.witness ? [e.witness] : [])));
  if (proved.engines.length === ends.length) return proved;
  // Each engine's reason in the engines' order, an unread one among them.
  const reasons = ends.flatMap((e) => (e.witness ? reservationOf([e.witness]).reasons : [e.reason!]));
  return { idle: false, engines: proved.engines, reasons };
}
