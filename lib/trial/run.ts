/**
 * One capacity trial point, given routes that reach the router, the engines and Prometheus (the provider
 * opens them as SSH local forwards from the router host): wait until the fleet is idle, snapshot, send
 * the open-loop schedule, wait until idle again, snapshot, then summarise, reconcile, predict and judge.
 * Nothing here opens a connection of its own but the load client's to `routes.router`.
 */
import { parsePrometheusText, gaugeValue } from "../engine/prometheus";
import { runPoint } from "./client";
import { summarise } from "./summary";
import { departure, pointRange, predictedCurve, predictPoint, throughRouter } from "./predict";
import { engineCounters, routerCounters } from "./counters";
import { reconcile, DEFAULT_TOLERANCE } from "./reconcile";
import { judgePoint } from "./verdict";
import type { HttpGet } from "./http";
import { prometheusCounters } from "./prometheus";
import type { ClientRun, CounterSnapshot, TrialObservations, TrialPoint, TrialSlo } from "./types";
import type { ProfileRow } from "../profiling/store";

export interface TrialRoutes {
  /** Base URL reaching the router (a forward's loopback end). */
  router: string;
  engines: Array<{ iid: string; role: "prefill" | "decode"; base: string }>;
  /** Base URL reaching the stack's Prometheus, when it runs. */
  prometheus?: string;
}

/** What only a login to the hosts shows: socket summaries, and who holds the router's port. */
export interface HostProbes {
  sockets(): Promise<Record<string, string>>;
  /** Why the process listening on the router's port is not the router, when it is not. */
  listener(): Promise<string | undefined>;
}

export interface TrialOptions {
  point: TrialPoint;
  model: string;
  slo: TrialSlo;
  profiles: Array<{ iid: string; role: "prefill" | "decode"; row: ProfileRow }>;
  requestTimeoutS: number;
  drainTimeoutS: number;
  scrapeIntervalS: number;
  minGoodFraction: number;
  predictionBound: number;
  /** Added to the predicted first token: the router's overhead on the client's path. */
  routerOverheadS: number;
  requestIdPrefix: string;
  log?: (line: string) => void;
}

/** The state of the fleet at one edge of the point, as kept in the snapshots artifacts. */
export interface EdgeSnapshot {
  at: string;
  routerHealth: unknown;
  routerMetrics: string;
  engineMetrics: Record<string, string>;
  sockets: Record<string, string>;
  listener?: string;
  direct: CounterSnapshot;
  prometheus?: CounterSnapshot;
  scrapeProblems: string[];
}

export interface TrialOutcome {
  observations: TrialObservations;
  run: ClientRun;
  before: EdgeSnapshot;
  after: EdgeSnapshot;
}

const METRICS_TIMEOUT_S = 10;
const POLL_MS = 250;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function text(get: HttpGet, url: string, what: string): Promise<string> {
  const r = await get(url, METRICS_TIMEOUT_S);
  if (r.status !== 200) throw new Error(`${what}: HTTP ${r.status}: ${r.body.slice(0, 200)}`);
  return r.body;
}

/** Every engine's and the router's /metrics, read once. */
async function readMetrics(get: HttpGet, routes: TrialRoutes): Promise<{ router: string; engines: Record<string, string> }> {
  const [router, ...engines] = await Promise.all([text(get, `${routes.router}/metrics`, "router GET /metrics"), ...routes.engines.map((e) => text(get, `${e.base}/metrics`, `engine ${e.iid} GET /metrics`))]);
  return { router, engines: Object.fromEntries(routes.engines.map((e, i) => [e.iid, engines[i]])) };
}

/** What still holds work: the router's retained requests and each engine's running and waiting ones. */
export function busy(metrics: { router: string; engines: Record<string, string> }): string[] {
  const held: string[] = [];
  const retained = gaugeValue(parsePrometheusText(metrics.router), "narwhal_http_retained") ?? 0;
  if (retained > 0) held.push(`the router holds ${retained} request(s)`);
  for (const [iid, body] of Object.entries(metrics.engines)) {
    const c = engineCounters(body);
    if (c.running + c.waiting > 0) held.push(`${iid} has ${c.running} running and ${c.waiting} waiting`);
  }
  return held;
}

/**
 * Waits, within `trial.drainTimeoutS`, until no request is in flight anywhere: the runbook runs the next
 * point only after a router drain, so one point's tail never lands in another's counters.
 */
export async function drain(get: HttpGet, routes: TrialRoutes, boundS: number, pointId: string): Promise<{ router: string; engines: Record<string, string> }> {
  const deadline = Date.now() + boundS * 1000;
  for (;;) {
    const metrics = await readMetrics(get, routes);
    const held = busy(metrics);
    if (!held.length) return metrics;
    if (Date.now() > deadline) throw new Error(`trial point ${pointId}: the fleet did not drain within trial.drainTimeoutS (${boundS} s): ${held.join("; ")}; wait for the other load to finish or raise the bound`);
    await sleep(POLL_MS);
  }
}

async function edge(get: HttpGet, routes: TrialRoutes, hosts: HostProbes, o: TrialOptions): Promise<EdgeSnapshot> {
  const metrics = await drain(get, routes, o.drainTimeoutS, o.point.id);
  const idleAt = Date.now();
  const health = await get(`${routes.router}/health`, METRICS_TIMEOUT_S);
  const [sockets, listener] = await Promise.all([hosts.sockets(), hosts.listener()]);
  const direct: CounterSnapshot = {
    at: new Date(idleAt).toISOString(),
    engines: Object.fromEntries(Object.entries(metrics.engines).map(([iid, body]) => [iid, engineCounters(body)])),
    router: routerCounters(metrics.router),
  };
  const prom = routes.prometheus
    ? await prometheusCounters(get, routes.prometheus, { sinceMs: idleAt, boundS: 3 * o.scrapeIntervalS + 5, iids: routes.engines.map((e) => e.iid) })
    : { problems: ["the stack runs no Prometheus (observability.enabled is false)"] };
  let routerHealth: unknown = health.body;
  try {
    routerHealth = JSON.parse(health.body);
  } catch {
    // kept as text
  }
  return {
    at: direct.at,
    routerHealth,
    routerMetrics: metrics.router,
    engineMetrics: metrics.engines,
    sockets,
    ...(listener ? { listener } : {}),
    direct,
    ...(prom.snapshot ? { prometheus: prom.snapshot } : {}),
    scrapeProblems: prom.problems,
  };
}

/** Runs the point and judges it; a failure to reach anything throws, a failed request is a record. */
export async function runTrial(get: HttpGet, routes: TrialRoutes, hosts: HostProbes, o: TrialOptions): Promise<TrialOutcome> {
  const log = o.log ?? (() => undefined);
  const engines = o.profiles.map((p) => ({ role: p.role, row: p.row }));
  const { range } = pointRange(engines, o.point);
  const prediction = throughRouter(predictPoint(engines, o.point), o.routerOverheadS);
  log(`trial ${o.point.id}: draining, then ${o.point.requests} requests at ${o.point.rate}/s`);
  const before = await edge(get, routes, hosts, o);
  const run = await runPoint({ baseUrl: routes.router, model: o.model, point: o.point, vocabSize: TRIAL_VOCABULARY, requestTimeoutS: o.requestTimeoutS, requestIdPrefix: o.requestIdPrefix });
  log(`trial ${o.point.id}: sent ${run.records.length}, waiting for the fleet to drain`);
  const after = await edge(get, routes, hosts, o);
  const summary = summarise(run, o.slo);
  const roles = Object.fromEntries(routes.engines.map((e) => [e.iid, e.role]));
  const reconciliation = reconcile({
    records: run.records,
    summary,
    roles,
    direct: { before: before.direct, after: after.direct },
    prometheus: { before: before.prometheus, after: after.prometheus, problems: [...before.scrapeProblems, ...after.scrapeProblems] },
    listenerProblem: before.listener ?? after.listener,
    tolerance: DEFAULT_TOLERANCE,
  });
  const judged = judgePoint({ summary, reconciliation, minGoodFraction: o.minGoodFraction, slo: o.slo });
  const observations: TrialObservations = {
    point: o.point,
    slo: o.slo,
    summary,
    prediction,
    departure: departure(prediction, summary, o.predictionBound),
    predictedCurve: predictedCurve(engines, o.point).map((c) => throughRouter(c, o.routerOverheadS)),
    range,
    reconciliation,
    verdict: judged.verdict,
    reasons: judged.reasons,
  };
  return { observations, run, before, after };
}

/**
 * Token ids every supported model's vocabulary holds (at least 32,000 entries): the prompts are lists
 * of ids, which the router sizes exactly without a tokenizer.
 */
export const TRIAL_VOCABULARY = 32000;
