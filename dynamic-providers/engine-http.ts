/**
 * The one HTTP transport of Gate C's providers: an {@link Ask} over undici with its own connection pool,
 * closed after each provider call (a restarted engine on the same port never meets a stale socket, and
 * nothing keeps the provider host alive). undici is required at call time, never captured. Also the cheap
 * observation of when each engine's live process started, which the peer wave and a generation's peer
 * check both rest on.
 */
import { endpoint, httpFailure, processStartFrom, type Ask, type ProcessIdentity, type ProofSubject } from "../lib/engine/generation";
import { engineHeaders, PROBE_ACCEPT, sendJson } from "../lib/engine/request";

/** The runbook's `urlopen(..., timeout=60)`: the longest any single probe may take. */
export const REQUEST_TIMEOUT_S = 60;
/** A refresh's probes: far past a loaded engine's answer, short of holding every preview on a hung engine. */
export const REFRESH_TIMEOUT_S = 15;

export interface EngineHttp {
  readonly ask: Ask;
  close(): Promise<void>;
}

/** An Ask for one engine; the API key, when set, goes out as `Authorization: Bearer` on every request. */
export function engineHttp(subject: ProofSubject, apiKey: string | undefined, timeoutS = REQUEST_TIMEOUT_S): EngineHttp {
  const { Agent } = require("undici") as typeof import("undici");
  const agent = new Agent({ keepAliveTimeout: 1000, connect: { timeout: timeoutS * 1000 } });
  const ask: Ask = async (path, body, options = {}) => {
    const t = options.timeoutS ?? timeoutS;
    const method = body === undefined ? "GET" : "POST";
    try {
      // One connection per probe: a reused keep-alive socket the engine has just closed would fail
      // a request that never reached it.
      const res = await sendJson(agent, endpoint(subject, path), engineHeaders(apiKey, body !== undefined, PROBE_ACCEPT), body, t, method, { reset: true });
      return { status: res.status, body: res.text };
    } catch (err) {
      throw httpFailure(subject, path, method, err, t);
    }
  };
  return { ask, close: () => agent.close() };
}

/** Runs `fn` with an {@link EngineHttp} and closes its pool whatever happens. */
export async function withEngineHttp<T>(
  subject: ProofSubject,
  apiKey: string | undefined,
  fn: (ask: Ask) => Promise<T>,
  timeoutS = REQUEST_TIMEOUT_S,
): Promise<T> {
  const http = engineHttp(subject, apiKey, timeoutS);
  try {
    return await fn(http.ask);
  } finally {
    await http.close();
  }
}

/** A refresh must not hang on one engine: each observation is bounded. */
export const OBSERVE_TIMEOUT_S = 10;

export interface Observed {
  readonly engineId: string;
  readonly hostAlias: string;
  readonly url: string;
  readonly processIdentity: ProcessIdentity;
}

/**
 * How long a refresh's observation of an engine's start serves other refresh reads in the same provider
 * host. A refresh reads every generation and every wave at once, and each of them observes the same KV
 * peers: one observation per engine per refresh, not one per engine per peer (64 engines: 64 reads of
 * /metrics, not 4,032). Well within one refresh; far shorter than any restart the next refresh must see.
 */
export const REFRESH_OBSERVATION_SHARED_S = 30;

/** Observations a refresh may share, by engine URL and API key, with when each was started. */
const sharedObservations = new Map<string, { at: number; start: Promise<number | null> }>();

function observeStart(e: Observed, apiKey: string | undefined): Promise<number | null> {
  return withEngineHttp(e, apiKey, async (ask) => processStartFrom(e, await ask("/metrics")), OBSERVE_TIMEOUT_S).catch(() => null);
}

/** A refresh's observation of `e`: the one another read made less than {@link REFRESH_OBSERVATION_SHARED_S} ago, or a new one. */
function sharedStart(e: Observed, apiKey: string | undefined, now: number): Promise<number | null> {
  const key = JSON.stringify([e.url, e.processIdentity.hostAlias, apiKey ?? null]);
  const seen = sharedObservations.get(key);
  if (seen && now - seen.at < REFRESH_OBSERVATION_SHARED_S * 1000) return seen.start;
  const start = observeStart(e, apiKey);
  sharedObservations.set(key, { at: now, start });
  return start;
}

/**
 * One start time per engine; `null` when the engine did not answer (its own proof reports why). A
 * refresh (`forRefresh`) shares observations between its reads; a wave or a proof observes afresh, since
 * it judges what runs at that moment.
 */
export async function observeStarts(engines: readonly Observed[], apiKey: string | undefined, options: { forRefresh?: boolean } = {}): Promise<Record<string, number | null>> {
  const now = Date.now();
  const starts = await Promise.all(engines.map((e) => (options.forRefresh ? sharedStart(e, apiKey, now) : observeStart(e, apiKey))));
  return Object.fromEntries(engines.map((e, i) => [e.engineId, starts[i]]));
}
