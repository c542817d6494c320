/**
 * Whether a probe had its engines to itself. The runbook reserves the measured engines for fabric,
 * profile and calibration probes "so the measurements reflect these processes at idle load". Narwhal
 * 0.7.0 cannot take an engine out of a serving router's placement and give it back without a restart
 * (docs/gates.md), so a probe proves the reservation instead: it reads each engine's own vLLM counters
 * just before its first request and just after its last, and counts what the engine served besides the
 * probe's own requests. An engine the router has ejected (a restarted process) shows none; one it kept
 * in placement shows the router's traffic, and the step that measured beside it is `degraded`.
 *
 * Foreign work in a window is what the engine finished beyond the probe's own finishes, plus what it
 * still holds once the probe's requests are done; a request in flight at the start is counted when it
 * finishes or if it is still there at the end. A request a client aborted is not in vLLM's finish
 * counter, so it goes unseen unless it is in flight at a read.
 */
import { engineCounters } from "../trial/counters";
import type { EngineCounters } from "../trial/types";

/** One engine's load at one read: its finished requests, what it holds, and its process. */
export interface EngineLoad {
  /** `vllm:request_success_total`, every finished_reason. */
  finished: number;
  /** `vllm:num_requests_running` + `vllm:num_requests_waiting`. */
  inFlight: number;
  processStart: number | null;
}

/** What one engine did during a probe's window. */
export interface EngineWitness {
  engine: string;
  before: EngineLoad;
  after: EngineLoad;
  /** The probe's own requests the engine finished (answered in full). */
  own: number;
  /** Requests the engine served or held beside the probe's: 0 when it was reserved in fact. */
  foreign: number;
  /** The engine's process changed during the window, so its counters started again. */
  restarted: boolean;
}

/** A probe's reservation as its evidence record keeps it (`observations.reservation`). */
export interface Reservation {
  /** Every measured engine served nothing but the probe, in the same process throughout. */
  idle: boolean;
  engines: EngineWitness[];
  /** Why the probe was not reserved, one line per engine; empty when idle. */
  reasons: string[];
}

/** An engine's load from its `/metrics` body. `whose` names the engine in a parse error. */
export function loadOf(metricsText: string, whose: string): EngineLoad {
  return loadFromCounters(engineCounters(metricsText, whose));
}

export function loadFromCounters(c: EngineCounters): EngineLoad {
  const finished = Object.values(c.success).reduce((s, n) => s + n, 0);
  return { finished, inFlight: c.running + c.waiting, processStart: c.processStart ?? null };
}

export function witness(engine: string, before: EngineLoad, after: EngineLoad, own: number): EngineWitness {
  const restarted = before.processStart !== after.processStart;
  const foreign = restarted ? 0 : Math.max(0, after.finished - before.finished - own) + after.inFlight;
  return { engine, before, after, own, foreign, restarted };
}

export function reservationOf(witnesses: readonly EngineWitness[]): Reservation {
  const reasons = witnesses.flatMap((w) => {
    if (w.restarted) return [`engine ${w.engine} restarted during the probe (process start ${w.before.processStart} -> ${w.after.processStart}): its counters cannot say what else it served`];
    if (w.foreign === 0) return [];
    const held = w.after.inFlight ? `, ${w.after.inFlight} still running or waiting at its end` : "";
    return [`engine ${w.engine} served ${w.foreign} ${w.foreign === 1 ? "request" : "requests"} besides the probe's ${w.own}${held}: it was not reserved, so its figures are not the runbook's idle figures`];
  });
  return { idle: reasons.length === 0, engines: [...witnesses], reasons };
}

/** The reasons a recorded `observations.reservation` gives for a step measured beside other traffic. */
export function reservationReasons(observations: unknown): string[] | undefined {
  const r = (observations as { reservation?: Partial<Reservation> } | null | undefined)?.reservation;
  if (!r || r.idle !== false) return undefined;
  return Array.isArray(r.reasons) && r.reasons.length ? r.reasons.map(String) : ["the probe's engines served other requests during it"];
}

/** How long a probe's closing read waits for vLLM's finish counter to cover the probe's own requests. */
export const SETTLE_BOUND_S = 2;
const SETTLE_STEP_MS = 25;

/**
 * The closing read of a window: vLLM counts a finish as it processes the step's outputs, which can come a
 * moment after the client read the answer, so the engine is read again, within {@link SETTLE_BOUND_S},
 * until its finishes cover the probe's own and it holds nothing; the last read is taken either way (what
 * it still shows then is foreign).
 */
export async function settledLoad(read: () => Promise<EngineLoad>, before: EngineLoad, own: number, o: { now?: () => number; sleep?: (ms: number) => Promise<void>; boundS?: number } = {}): Promise<EngineLoad> {
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const until = now() + (o.boundS ?? SETTLE_BOUND_S) * 1000;
  for (;;) {
    const load = await read();
    const covered = load.processStart !== before.processStart || (load.finished - before.finished >= own && load.inFlight === 0);
    if (covered || now() >= until) return load;
    await sleep(SETTLE_STEP_MS);
  }
}
