/**
 * Requests through the router while a fault is recovered, with every engine's `/health` sampled beside
 * them. Afterwards the router's own journal says which engines each request touched, so a failed request
 * can be judged: the router sent it to engines that answered `/health` throughout (the failure the
 * router must not cause), or to an engine that was down or restarting, or found no engine of a role it
 * could place the request on (every one restarting or not yet admitted again).
 */
import { request } from "undici";
import { runInHost } from "../../../sim/hosts";
import { sleep } from "../../../sim/hosts/exec";
import { MODEL } from "./stack";

const SAMPLE_EVERY_MS = 250;
/**
 * Each client starts at most one request per this many ms: an outage is timed to a quarter second, and
 * the clients do not load the machine that runs the CLI (requests sent back to back cost the simulated
 * engines and the router more CPU than the `up` they watch).
 */
const REQUEST_EVERY_MS = 250;
/** Bounds for one request and one health probe: nothing here waits unbounded. */
const REQUEST_TIMEOUT_MS = 30_000;
const PROBE_TIMEOUT_MS = 1_000;
/** A health sample this close to a request still speaks for it (sampling is not continuous). */
const SAMPLE_SLACK_MS = 500;

export interface SentRequest {
  readonly rid: string;
  readonly start: number;
  readonly end: number;
  /** HTTP status, or the client's error when no response came (router not listening, reset). */
  readonly outcome: number | string;
}

interface HealthSample {
  readonly engineId: string;
  readonly at: number;
  readonly ok: boolean;
}

export interface FailedRequest extends SentRequest {
  /** The router's journal has a row for it: the router itself took the request (and failed or refused it). */
  readonly journaled: boolean;
  /** Engines the router's journal names for the request (each attempt's prefill and decode); empty if it never reached one. */
  readonly engines: string[];
  /** The router's reason for the failure (its journal's `reason`, e.g. `no_engine`), if it wrote one. */
  readonly reason?: string;
  /**
   * The request failed at engines that answered `/health` in every sample around it. A request the router
   * refused for want of any placeable engine of a role (`no_engine`) failed at none, whatever it touched.
   */
  readonly enginesHealthy: boolean;
}

export interface TrafficReport {
  readonly sent: SentRequest[];
  readonly failed: FailedRequest[];
  /** The longest time without a served request, from the first request sent: how long clients saw nothing served. */
  readonly longestGapS: number;
  /** Each engine a served request's failed earlier attempt named (the router retried it elsewhere), once per attempt. */
  readonly retriedAt: string[];
}

interface JournalRow {
  client_rid?: string;
  prefill_iid?: string | null;
  decode_iid?: string | null;
  attempt_failures?: Array<{ prefill_iid?: string | null; decode_iid?: string | null }>;
  reason?: string | null;
}

/** narwhal/serving/outcomes.py: the failure reason of a request no engine of some role could take. */
const NO_ENGINE = "no_engine";

/** Starts `clients` request loops through `routerUrl` and a health sampler over `engines` until `stop`. */
export function startTraffic(routerUrl: string, engines: ReadonlyArray<{ id: string; url: string }>, clients = 2) {
  const sent: SentRequest[] = [];
  const health: HealthSample[] = [];
  let running = true;
  let n = 0;
  // Request ids are unique across traffic runs: the router's journal keeps every run's rows.
  const run = `${process.pid}-${Date.now().toString(36)}`;

  const client = async () => {
    while (running) {
      const rid = `traffic-${run}-${n++}`;
      const start = Date.now();
      const outcome = await request(`${routerUrl}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-request-id": rid },
        body: JSON.stringify({ model: MODEL, prompt: "A narwhal is", max_tokens: 4, temperature: 0 }),
        headersTimeout: REQUEST_TIMEOUT_MS,
        bodyTimeout: REQUEST_TIMEOUT_MS,
      }).then(
        async (r) => (await r.body.dump(), r.statusCode),
        (e: Error & { code?: string }) => e.code ?? e.message,
      );
      sent.push({ rid, start, end: Date.now(), outcome });
      await sleep(start + REQUEST_EVERY_MS - Date.now());
    }
  };
  const sampler = async () => {
    while (running) {
      const at = Date.now();
      await Promise.all(
        engines.map(async (e) => {
          const ok = await request(`${e.url}/health`, { headersTimeout: PROBE_TIMEOUT_MS, bodyTimeout: PROBE_TIMEOUT_MS }).then(
            async (r) => (await r.body.dump(), r.statusCode === 200),
            () => false,
          );
          health.push({ engineId: e.id, at, ok });
        }),
      );
      await sleep(SAMPLE_EVERY_MS);
    }
  };
  const loops = [...Array.from({ length: clients }, client), sampler()];

  return {
    /**
     * Waits, up to `boundMs`, until a request sent at or after `since` was served: the service is back.
     * Returns whether it was; the loops keep running either way.
     */
    async servedAgain(since: number, boundMs: number): Promise<boolean> {
      const deadline = Date.now() + boundMs;
      while (!sent.some((r) => r.start >= since && r.outcome === 200)) {
        if (Date.now() >= deadline) return false;
        await sleep(SAMPLE_EVERY_MS);
      }
      return true;
    },
    /** Ends the loops, then reads the router's journal on `routerHost` (files under `routerDir`). */
    async stop(routerHost: string, routerDir: string): Promise<TrafficReport> {
      running = false;
      await Promise.all(loops);
      const journal = await readJournal(routerHost, routerDir);
      const healthyThrough = (id: string, from: number, to: number) => {
        const around = health.filter((s) => s.engineId === id && s.at >= from - SAMPLE_SLACK_MS && s.at <= to + SAMPLE_SLACK_MS);
        return around.length > 0 && around.every((s) => s.ok);
      };
      const failed = sent
        .filter((r) => r.outcome !== 200)
        .map((r) => {
          const row = journal.get(r.rid);
          const engines = row ? touchedEngines(row) : [];
          const reason = row?.reason ?? undefined;
          const atEngines = engines.length > 0 && reason !== NO_ENGINE;
          return { ...r, journaled: row !== undefined, engines, reason, enginesHealthy: atEngines && engines.every((id) => healthyThrough(id, r.start, r.end)) };
        });
      // From the first request sent, so a fault that stops service at once (the router's host gone) counts
      // the time until the first request served too.
      const servedAt = sent.filter((r) => r.outcome === 200).map((r) => r.end).sort((a, b) => a - b);
      const from = [Math.min(...sent.map((r) => r.start)), ...servedAt];
      const longestGapS = from.slice(1).reduce((most, t, i) => Math.max(most, t - from[i]), 0) / 1000;
      // Served, but only on a later attempt: the router's journal names where the earlier ones failed.
      const retriedAt = sent
        .filter((r) => r.outcome === 200)
        .flatMap((r) => (journal.get(r.rid)?.attempt_failures ?? []).flatMap((f) => [f.prefill_iid, f.decode_iid]))
        .filter((id): id is string => typeof id === "string");
      return { sent, failed, longestGapS, retriedAt };
    },
  };
}

function touchedEngines(row: JournalRow): string[] {
  const ids = [row.prefill_iid, row.decode_iid, ...(row.attempt_failures ?? []).flatMap((f) => [f.prefill_iid, f.decode_iid])];
  return [...new Set(ids.filter((id): id is string => typeof id === "string"))].sort();
}

/** Every journal row the router wrote (each router process appends), by the client's request id. */
async function readJournal(host: string, dir: string): Promise<Map<string, JournalRow>> {
  const r = await runInHost(host, ["sh", "-c", `find ${dir} -name 'journal*.jsonl' -exec cat {} +`]);
  const rows = new Map<string, JournalRow>();
  for (const line of r.stdout.split("\n")) {
    if (!line.startsWith("{")) continue;
    const row = JSON.parse(line) as JournalRow;
    if (typeof row.client_rid === "string") rows.set(row.client_rid, row);
  }
  return rows;
}
