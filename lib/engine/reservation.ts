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
  /** The engine's process changed during the window (or its finish counter went back), so its counters started again. */
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
  const c = engineCounters(metricsText, whose);
  const finished = Object.values(c.success).reduce((s, n) => s + n, 0);
  return { finished, inFlight: c.running + c.waiting, processStart: c.processStart ?? null };
}

export function witness(engine: string, before: EngineLoad, after: EngineLoad, own: number): EngineWitness {
  // A counter that went back is a restart too: the only sign where the engine has no process start
  // (vLLM with several API servers).
  const restarted = before.processStart !== after.processStart || after.finished < before.finished;
  const foreign = restarted ? 0 : Math.max(0, after.finished - before.finished - own) + after.inFlight;
  return { engine, before, after, own, foreign, restarted };
}

export function reservationOf(witnesses: readonly EngineWitness[]): Reservation {
  const reasons = witnesses.flatMap((w) => {
    if (w.restarted) return [`engine ${w.engine} restarted during the probe (process start ${w.before.processStart} -> ${w.after.processStart}, finished ${w.before.finished} -> ${w.after.finished}): its counters cannot say what else it served`];
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

