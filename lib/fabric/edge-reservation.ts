/**
 * Whether a fabric edge had its hosts' engines to itself (lib/engine/reservation.ts). The runbook measures
 * fabric "one directed edge at a time while all engines remain idle": KV transfers of the engines on the
 * edge's source and destination hosts share the link, so those engines are the ones whose counters the
 * edge reads, just before its first tool step and just after its last. The probe sends no engine request
 * of its own. An engine whose `/metrics` cannot be read at either end of the window cannot be proved
 * idle, so the edge is not idle, with the reason; the measurement itself stands.
 */
import { reservationOf, witness, type EngineLoad, type Reservation } from "../engine/reservation";

/** One engine on one of the edge's hosts, as the fleet reaches it. */
export interface EdgeHostEngine {
  engineId: string;
  /** Which of the edge's hosts it runs on. */
  side: "source" | "destination";
  /** Its HTTP base URL (the launch plan's `http://<fabric address>:<port>`). */
  url: string;
}

/** One read of an engine's `/metrics`: its load, or why there is none. */
export type EngineRead = { ok: true; load: EngineLoad } | { ok: false; problem: string };

/** An engine whose counters the edge could not read at one end of its window, or both. */
export interface UnreadEngine {
  engine: string;
  side: EdgeHostEngine["side"];
  url: string;
  /** Before the measurement, after it, or both, each with what failed (once when both failed alike). */
  problems: string[];
}

/** The edge record's `observations.reservation`: the witnesses, the engines it watched, and those it could not read. */
export interface EdgeReservation extends Reservation {
  watched: EdgeHostEngine[];
  unread: UnreadEngine[];
}

/** What the edge's outputs keep of it: enough for the gate and a reader of `pulumi stack output`. */
export interface EdgeReservationSummary {
  idle: boolean;
  reasons: string[];
  /** Per engine, what it served besides the probe; null when its counters could not be read. */
  foreign: Record<string, number | null>;
}

/** The engine's `/metrics` as the SSH forward dials it: the URL's host (unbracketed), port and path. */
export function metricsTarget(url: string): { host: string; port: number; path: string } {
  const u = new URL(url);
  const path = `${u.pathname.replace(/\/+$/, "")}/metrics`;
  return { host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port || (u.protocol === "https:" ? 443 : 80)), path };
}

const unreadReason = (u: UnreadEngine) =>
  `engine ${u.engine} on the ${u.side} host (${u.url}): its /metrics could not be read ${u.problems.join("; ")}: its counters cannot say what else it served, so it is not proved idle`;

/** The reservation from each engine's reads before and after the measurement. */
export function edgeReservation(reads: ReadonlyArray<{ engine: EdgeHostEngine; before: EngineRead; after: EngineRead }>): EdgeReservation {
  const witnesses = reads.flatMap(({ engine, before, after }) => (before.ok && after.ok ? [witness(engine.engineId, before.load, after.load, 0)] : []));
  const unread = reads.flatMap(({ engine, before, after }): UnreadEngine[] => {
    const problems =
      !before.ok && !after.ok && before.problem === after.problem
        ? [`before or after the measurement (${before.problem})`]
        : [...(before.ok ? [] : [`before the measurement (${before.problem})`]), ...(after.ok ? [] : [`after it (${after.problem})`])];
    return problems.length ? [{ engine: engine.engineId, side: engine.side, url: engine.url, problems }] : [];
  });
  const read = reservationOf(witnesses);
  const reasons = [...read.reasons, ...unread.map(unreadReason)];
  return { ...read, idle: reasons.length === 0, reasons, watched: reads.map((r) => r.engine), unread };
}

export function reservationSummary(r: EdgeReservation): EdgeReservationSummary {
  const foreign: Record<string, number | null> = {};
  for (const e of r.watched) foreign[e.engineId] = null;
  for (const w of r.engines) foreign[w.engine] = w.restarted ? null : w.foreign;
  return { idle: r.idle, reasons: r.reasons, foreign };
}
