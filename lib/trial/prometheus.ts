/**
 * The stack's Prometheus as the trial reads it: the counters it holds once every router and engine
 * target has been scraped after an instant (the fleet idle at a point's edge). Prometheus scrapes every
 * few seconds, too coarse for a point's edges on its own, so the reading waits for the first scrape after
 * the edge, within a bound, and otherwise says which target it never saw.
 */
import { countersFromPrometheus, TRIAL_QUERIES, type QueryReply, type TrialQuery } from "./counters";
import type { HttpGet } from "./http";
import type { CounterSnapshot } from "./types";

const QUERY_TIMEOUT_S = 10;
const POLL_MS = 500;

async function query(get: HttpGet, base: string, promql: string): Promise<QueryReply> {
  const r = await get(`${base}/api/v1/query?query=${encodeURIComponent(promql)}`, QUERY_TIMEOUT_S);
  try {
    return JSON.parse(r.body) as QueryReply;
  } catch {
    return { status: "error", errorType: `HTTP ${r.status}`, error: r.body.slice(0, 200) };
  }
}

/** Every TRIAL_QUERIES reply at once. */
async function replies(get: HttpGet, base: string): Promise<Partial<Record<TrialQuery, QueryReply>>> {
  const keys = Object.keys(TRIAL_QUERIES) as TrialQuery[];
  const got = await Promise.all(keys.map((k) => query(get, base, TRIAL_QUERIES[k])));
  return Object.fromEntries(keys.map((k, i) => [k, got[i]]));
}

/**
 * The counters Prometheus holds once every target was scraped at or after `sinceMs`, waiting at most
 * `boundS` (three scrape intervals and a margin); past it, the problems that stood in the way.
 *
 * The queries of one read run side by side, so a scrape can land between them: the scrape time may be
 * the new one while a counter is still the old scrape's. A scrape's samples are stored together, so once
 * one read has seen the new scrape time, every query started after it sees that scrape whole: the
 * counters are taken from the read after it.
 */
export async function prometheusCounters(get: HttpGet, base: string, o: { sinceMs: number; boundS: number; iids: readonly string[] }): Promise<{ snapshot?: CounterSnapshot; problems: string[] }> {
  const deadline = Date.now() + o.boundS * 1000;
  const at = new Date(o.sinceMs).toISOString();
  try {
    const readNow = async () => countersFromPrometheus(await replies(get, base), { at, iids: o.iids, scrapedAfterS: o.sinceMs / 1000 });
    for (;;) {
      const read = await readNow();
      if (!read.problems.length) {
        const settled = await readNow();
        return { snapshot: settled.snapshot, problems: settled.problems };
      }
      if (Date.now() > deadline) return { problems: read.problems.map((p) => `${p} (waited ${o.boundS} s for a scrape after the fleet was idle)`) };
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  } catch (e) {
    return { problems: [`Prometheus at the router host could not be read: ${(e as Error).message}`] };
  }
}
