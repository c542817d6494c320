/**
 * An engine's load read just after a probe's last request, once its counters have caught up with it.
 * vLLM counts a finish in `vllm:request_success_total` when its frontend records the step's stats,
 * which may come a moment after the client has the whole answer, so a read taken at once can show the
 * probe's last request neither finished nor gone. The read is therefore taken again, polling within a
 * short named bound, until the finished count covers the probe's own finishes and nothing is in
 * flight; past the bound the last read stands, and what it still holds counts as another client's.
 *
 * A request the probe gave up on (a timeout, an observation bound) is aborted, and vLLM drops it only at
 * its next engine step, which on a slow engine can outlast that bound. While everything the engine
 * shows could still be the probe's own (no finish beyond them, no more held than it gave up on), the
 * wait goes on to a second, longer bound rather than count the probe's own requests as another's.
 * Clock and sleep are injected so the bounds are tested without waiting them out.
 */
import { performance } from "node:perf_hooks";
import type { EngineLoad } from "./reservation";

/** How long the after-read waits for an engine's finish counter to cover the probe's own answers. */
export const SETTLE_BOUND_S = 2;
/** How long it waits, when the probe gave up on requests, for the engine to drop them at its next step. */
export const ABANDONED_SETTLE_BOUND_S = 10;
/** The pause between two after-reads. */
export const SETTLE_POLL_MS = 100;

export interface SettleClock {
  /** Milliseconds on a monotonic clock. */
  now(): number;
  sleep(ms: number): Promise<void>;
}

export interface SettleOptions {
  boundS?: number;
  abandonedBoundS?: number;
  pollMs?: number;
  clock?: SettleClock;
}

/** What the probe did on one engine: the requests it had answered in full, and those it gave up on. */
export interface OwnRequests {
  own: number;
  abandoned?: number;
}

/** The system's monotonic clock and timers. */
export const realClock: SettleClock = {
  now: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * Whether `after` is a read worth keeping: the engine counted at least the probe's `own` finishes since
 * `before` and holds nothing, or its counters started again (another process, or a counter that went
 * back), when no later read can say more about the window.
 */
export function loadSettled(before: EngineLoad, after: EngineLoad, own: number): boolean {
  if (after.processStart !== before.processStart || after.finished < before.finished) return true;
  return after.finished - before.finished >= own && after.inFlight === 0;
}

/** Whether all `after` shows since `before` may yet be the probe's own: its answered requests and those it gave up on. */
export function mayBeOwn(before: EngineLoad, after: EngineLoad, r: OwnRequests): boolean {
  const finished = after.finished - before.finished;
  return finished <= r.own && finished + after.inFlight <= r.own + (r.abandoned ?? 0);
}

/** The first settled read of `read`, or the last one taken within the bounds. A read that throws ends the wait with its error. */
export async function settledLoad(read: () => Promise<EngineLoad>, before: EngineLoad, r: OwnRequests, o: SettleOptions = {}): Promise<EngineLoad> {
  const clock = o.clock ?? realClock;
  const pollMs = o.pollMs ?? SETTLE_POLL_MS;
  const start = clock.now();
  const bound = start + (o.boundS ?? SETTLE_BOUND_S) * 1000;
  const abandonedBound = start + (o.abandonedBoundS ?? ABANDONED_SETTLE_BOUND_S) * 1000;
  let load = await read();
  while (!loadSettled(before, load, r.own)) {
    const until = r.abandoned && mayBeOwn(before, load, r) ? Math.max(bound, abandonedBound) : bound;
    const left = until - clock.now();
    if (left <= 0) break;
    await clock.sleep(Math.min(pollMs, left));
    load = await read();
  }
  return load;
}
