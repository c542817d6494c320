/**
 * The concurrent transfer schedule: independent pairs run together, but no engine ever has two
 * transfers in flight (a second transfer on one engine would measure contention, not the path). The
 * round-robin (circle) tournament gives every unordered pair a round in which no engine repeats; each
 * direction takes its own round, so a full mesh of N engines finishes in 2(N−1) rounds (2N when N is
 * odd) instead of N(N−1) sequential probes. Pairs outside a perfect tournament (ring, pinned roles)
 * are packed first-fit in the same order.
 */
import type { Probe } from "./pairs";

export type ScheduleMode = "concurrent" | "sequential";

/** Circle-method slot of each directed pair among `ids`. */
function tournamentSlots(ids: readonly string[]): Map<string, number> {
  const seats: (string | null)[] = [...ids];
  if (seats.length % 2 === 1) seats.push(null);
  const m = seats.length;
  const slots = new Map<string, number>();
  for (let r = 0; r < m - 1; r++) {
    for (let i = 0; i < m / 2; i++) {
      const a = seats[i];
      const b = seats[m - 1 - i];
      if (a === null || a === undefined || b === null || b === undefined) continue;
      slots.set(`${a}\u0000${b}`, 2 * r);
      slots.set(`${b}\u0000${a}`, 2 * r + 1);
    }
    // Keep seat 0 fixed and rotate the rest one place.
    const last = seats.pop()!;
    seats.splice(1, 0, last);
  }
  return slots;
}

/** Rounds of probes; within a round every engine appears at most once. */
export function roundRobin(probes: readonly Probe[]): Probe[][] {
  const ids = [...new Set(probes.flatMap((p) => [p.producer, p.consumer]))];
  const slots = tournamentSlots(ids);
  const order = probes
    .map((p, index) => ({ p, index, key: slots.get(`${p.producer}\u0000${p.consumer}`) ?? Number.MAX_SAFE_INTEGER }))
    .sort((x, y) => x.p.repeat - y.p.repeat || x.key - y.key || x.index - y.index)
    .map((x) => x.p);
  const rounds: Probe[][] = [];
  let remaining = order;
  while (remaining.length) {
    const busy = new Set<string>();
    const round: Probe[] = [];
    const later: Probe[] = [];
    for (const p of remaining) {
      if (busy.has(p.producer) || busy.has(p.consumer)) {
        later.push(p);
        continue;
      }
      busy.add(p.producer);
      busy.add(p.consumer);
      round.push(p);
    }
    rounds.push(round);
    remaining = later;
  }
  return rounds;
}

/** Runs every probe, concurrently by rounds or strictly one after another; results keep the probe order given. */
export async function runProbes<T>(probes: readonly Probe[], mode: ScheduleMode, run: (p: Probe) => Promise<T>): Promise<Array<{ probe: Probe; result: T }>> {
  const results = new Map<Probe, T>();
  if (mode === "sequential") {
    for (const p of probes) results.set(p, await run(p));
  } else {
    for (const round of roundRobin(probes)) {
      const done = await Promise.all(round.map(async (p) => [p, await run(p)] as const));
      for (const [p, r] of done) results.set(p, r);
    }
  }
  return probes.map((probe) => ({ probe, result: results.get(probe) as T }));
}
