/**
 * Reconciliation before judgement: over a point's window, the router's and engines' own counters must
 * agree with the client's records, and the client must have kept its schedule, before an SLO miss may be
 * called a capacity verdict. Otherwise the point is `unreconciled` and names each cause it can see.
 *
 * Under Narwhal's P/D split each client request is one prefill leg (`max_tokens: 1`, so one
 * `finished_reason="length"` finish and one generated token on a prefill engine) and one decode leg (a
 * `stop` or `length` finish on a decode engine, carrying all the client's completion tokens). Router
 * retries add legs, counted from the router's own attempt counters. Prompt-token counters are never
 * compared: the decode engine counts the whole prompt again when it takes the handed-off KV.
 */
import type { CounterSnapshot, EngineCounters, ReconcileCheck, ReconcileTolerance, Reconciliation, RequestRecord, RouterCounters, TrialSummary } from "./types";

/**
 * - `sendLagMs` 50: Node's timers keep about 1 ms; a p99 send lag fifty times that means the schedule
 *   slipped by a real fraction of a 100-1000 ms TTFT SLO, so the offered rate was not the one asked for.
 * - `eventLoopDelayMs` 100: a garbage collection or a burst of stream parsing stalls the loop for tens of
 *   ms; a stall past 100 ms is longer than a typical TPOT SLO and inflates every in-flight stream's TTFT
 *   and chunk gaps by as much, so the client's own timings would decide the verdict.
 * - `tokens` 0.02: in a clean run the generated tokens equal the client's completion tokens plus one per
 *   prefill leg exactly; the 2% leaves room only for the partial output of failed or retried decode legs,
 *   which no counter separates.
 */
export const DEFAULT_TOLERANCE: ReconcileTolerance = { sendLagMs: 50, eventLoopDelayMs: 100, tokens: 0.02 };

/** The causes that are the client machine's, not the fleet's: each cause sentence starts with its name and a colon. */
export const CLIENT_CAUSES = ["client saturation", "scheduler lag"] as const;

export interface ReconcileInput {
  records: RequestRecord[];
  summary: TrialSummary;
  /** Each engine's role during the point, by iid: every engine the point reconciles. */
  roles: Record<string, "prefill" | "decode">;
  /** From each engine's and the router's own `/metrics`, just before the first send and after the drain. */
  direct: { before: CounterSnapshot; after: CounterSnapshot };
  /** The same instants through the stack's Prometheus; `problems` are its failed queries, targets down, stale scrapes. */
  prometheus?: { before?: CounterSnapshot; after?: CounterSnapshot; problems: string[] };
  /** Why the client's path to the router was not the router's own listener, when the provider saw it. */
  listenerProblem?: string;
  tolerance: ReconcileTolerance;
}

const same = (a: number, b: number): boolean => Math.abs(a - b) < 1e-6;

function finishes(c: EngineCounters, reasons: readonly string[]): number {
  return reasons.reduce((s, r) => s + (c.success[r] ?? 0), 0);
}

/** Signs that an engine's counters restarted between the two readings, as sentences. */
function engineResets(before: EngineCounters, after: EngineCounters): string[] {
  const signs: string[] = [];
  if (before.processStart !== undefined && after.processStart !== undefined && before.processStart !== after.processStart) {
    signs.push(`process_start_time_seconds ${before.processStart} -> ${after.processStart}`);
  }
  for (const [reason, v] of Object.entries(before.success)) {
    const now = after.success[reason] ?? 0;
    if (now < v) signs.push(`vllm:request_success_total{finished_reason="${reason}"} fell ${v} -> ${now}`);
  }
  if (after.generationTokens < before.generationTokens) signs.push(`vllm:generation_tokens_total fell ${before.generationTokens} -> ${after.generationTokens}`);
  if (after.promptTokens < before.promptTokens) signs.push(`vllm:prompt_tokens_total fell ${before.promptTokens} -> ${after.promptTokens}`);
  return signs;
}

const ROUTER_FIELDS = [
  ["offered", "narwhal_offered_total"],
  ["served", "narwhal_served_total"],
  ["failed", "narwhal_failed_total"],
  ["prefillAttempts", "narwhal_prefill_attempts_total"],
  ["decodeAttempts", "narwhal_decode_attempts_total"],
] as const;

function routerResets(before: RouterCounters, after: RouterCounters): string[] {
  return ROUTER_FIELDS.filter(([k]) => after[k] < before[k]).map(([k, name]) => `${name} fell ${before[k]} -> ${after[k]}`);
}

/** The counted series of one engine, as a flat map, so Prometheus' deltas can be compared one by one. */
function engineSeries(c: EngineCounters): Record<string, number> {
  const out: Record<string, number> = { "vllm:generation_tokens_total": c.generationTokens, "vllm:prompt_tokens_total": c.promptTokens };
  for (const [reason, v] of Object.entries(c.success)) out[`vllm:request_success_total{finished_reason="${reason}"}`] = v;
  return out;
}

function routerSeries(c: RouterCounters): Record<string, number> {
  return Object.fromEntries(ROUTER_FIELDS.map(([k, name]) => [name, c[k]]));
}

function deltas(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return Object.fromEntries([...keys].map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)]));
}

/** Series whose Prometheus delta differs from the direct one, as `name direct/prometheus`. */
function deltaDisagreements(direct: Record<string, number>, prom: Record<string, number>): string[] {
  const keys = [...new Set([...Object.keys(direct), ...Object.keys(prom)])].sort();
  return keys.filter((k) => !same(direct[k] ?? 0, prom[k] ?? 0)).map((k) => `${k} Δ${direct[k] ?? 0} on /metrics, Δ${prom[k] ?? 0} in Prometheus`);
}

export function reconcile(o: ReconcileInput): Reconciliation {
  const { records, summary, roles, direct, tolerance } = o;
  const checks: ReconcileCheck[] = [];
  const causes: string[] = [];
  const scrapeFailures: string[] = [];
  const resets: string[] = [];

  if (summary.max_event_loop_delay_ms > tolerance.eventLoopDelayMs) {
    causes.push(`client saturation: the load client's event loop stalled up to ${summary.max_event_loop_delay_ms} ms (tolerance ${tolerance.eventLoopDelayMs} ms), which inflates its own TTFT and inter-token timings`);
  }
  if (summary.p99_send_lag_ms > tolerance.sendLagMs) {
    causes.push(`scheduler lag: p99 send lag ${summary.p99_send_lag_ms} ms exceeds ${tolerance.sendLagMs} ms (achieved send rate ${summary.achieved_send_rate} req/s): the offered rate was not kept`);
  }

  const sent = records.length;
  const ok = records.filter((r) => r.status === "ok");
  const successes = ok.length;
  const completionTokens = ok.reduce((s, r) => s + (r.usage?.completionTokens ?? 0), 0);
  const iids = Object.keys(roles).sort();

  // Engines and the router read directly: present at both ends, and not restarted in between.
  const engineDelta: Record<string, EngineCounters> = {};
  for (const iid of iids) {
    const before = direct.before.engines[iid];
    const after = direct.after.engines[iid];
    if (!before || !after) {
      scrapeFailures.push(`engine ${iid}'s /metrics was not read ${!before ? "before the first send" : "after the drain"}`);
      continue;
    }
    const signs = engineResets(before, after);
    checks.push({ name: `no counter reset on ${iid}`, client: 0, server: signs.length, ok: signs.length === 0, detail: signs.length ? signs.join("; ") : "process start unchanged and no counter fell" });
    if (signs.length) {
      resets.push(`engine ${iid}: ${signs.join("; ")}`);
      continue;
    }
    const d = deltas(engineSeries(before), engineSeries(after));
    engineDelta[iid] = {
      success: Object.fromEntries(Object.keys({ ...before.success, ...after.success }).map((r) => [r, (after.success[r] ?? 0) - (before.success[r] ?? 0)])),
      generationTokens: d["vllm:generation_tokens_total"],
      promptTokens: d["vllm:prompt_tokens_total"],
      running: after.running,
      waiting: after.waiting,
    };
  }
  let router: RouterCounters | undefined;
  const rb = direct.before.router;
  const ra = direct.after.router;
  if (!rb || !ra) scrapeFailures.push(`the router's /metrics was not read ${!rb ? "before the first send" : "after the drain"}`);
  else {
    const signs = routerResets(rb, ra);
    checks.push({ name: "no counter reset on the router", client: 0, server: signs.length, ok: signs.length === 0, detail: signs.length ? signs.join("; ") : "no router counter fell" });
    if (signs.length) resets.push(`router: ${signs.join("; ")}`);
    else router = Object.fromEntries(ROUTER_FIELDS.map(([k]) => [k, ra[k] - rb[k]])) as unknown as RouterCounters;
  }

  // The router's own totals against the client's.
  checks.push({
    name: "router offered = requests sent",
    client: sent,
    server: router?.offered ?? null,
    ok: router !== undefined && same(router.offered, sent),
    detail: router ? `Δnarwhal_offered_total ${router.offered}, client sent ${sent}` : "router counters unavailable",
  });
  checks.push({
    name: "router served = client successes",
    client: successes,
    server: router?.served ?? null,
    ok: router !== undefined && same(router.served, successes),
    detail: router ? `Δnarwhal_served_total ${router.served}, client successes ${successes}` : "router counters unavailable",
  });

  // Legs on each role. A missing engine makes the role's sum unknown rather than short.
  const roleSum = (role: "prefill" | "decode", pick: (c: EngineCounters) => number): number | null => {
    const members = iids.filter((i) => roles[i] === role);
    if (members.some((i) => !engineDelta[i])) return null;
    return members.reduce((s, i) => s + pick(engineDelta[i]), 0);
  };
  const decodeIds = iids.filter((i) => roles[i] === "decode");
  const prefillIds = iids.filter((i) => roles[i] === "prefill");
  const decodeFinishes = roleSum("decode", (c) => finishes(c, ["stop", "length"]));
  const retries = router ? Math.max(0, router.decodeAttempts - successes) : 0;
  checks.push({
    name: "decode finishes = client successes",
    client: successes,
    server: decodeFinishes,
    ok: decodeFinishes !== null && decodeFinishes >= successes - 1e-6 && decodeFinishes <= successes + retries + 1e-6,
    detail:
      `Δvllm:request_success_total{finished_reason=~"stop|length"} on decode engines ${decodeIds.join(", ") || "(none)"}: ${decodeFinishes ?? "unavailable"}; ` +
      `client successes ${successes}` +
      (router ? `; up to ${retries} more allowed for router decode attempts beyond successes (Δnarwhal_decode_attempts_total ${router.decodeAttempts})` : ""),
  });
  const prefillLegs = router ? router.prefillAttempts : sent;
  const prefillFinishes = roleSum("prefill", (c) => finishes(c, ["length"]));
  checks.push({
    name: "prefill legs = router prefill attempts",
    client: prefillLegs,
    server: prefillFinishes,
    ok: prefillFinishes !== null && same(prefillFinishes, prefillLegs),
    detail:
      `Δvllm:request_success_total{finished_reason="length"} on prefill engines ${prefillIds.join(", ") || "(none)"}: ${prefillFinishes ?? "unavailable"}; ` +
      (router ? `Δnarwhal_prefill_attempts_total ${router.prefillAttempts}` : `router figure unavailable, so the ${sent} requests sent`),
  });

  // Fleet-wide generated tokens: the decode legs' completion tokens plus one per prefill leg.
  const fleetTokens = iids.some((i) => !engineDelta[i]) ? null : iids.reduce((s, i) => s + engineDelta[i].generationTokens, 0);
  const legs = prefillIds.length ? prefillLegs : 0;
  const expectedTokens = completionTokens + legs;
  // A decode attempt beyond the successes (a retry, or a failed request's leg) may have generated up to
  // the tokens asked before it ended; no counter separates them, so they widen the bound upward only.
  const retryTokens = retries * records.reduce((m, r) => Math.max(m, r.outputTokens), 0);
  const slack = tolerance.tokens * Math.max(expectedTokens, 1);
  checks.push({
    name: "generated tokens = completion tokens + prefill legs",
    client: expectedTokens,
    server: fleetTokens,
    ok: fleetTokens !== null && fleetTokens >= expectedTokens - slack && fleetTokens <= expectedTokens + retryTokens + slack,
    detail:
      `Σ Δvllm:generation_tokens_total over ${iids.length} engines: ${fleetTokens ?? "unavailable"}; client Σ completion_tokens ${completionTokens} + ${legs} prefill legs; tolerance ${tolerance.tokens * 100}%` +
      (retryTokens ? `, plus up to ${retryTokens} for ${retries} decode attempts beyond successes` : ""),
  });

  // Prometheus must have seen the same window the engines' own /metrics did.
  if (o.prometheus) {
    const p = o.prometheus;
    for (const problem of p.problems) scrapeFailures.push(`Prometheus: ${problem}`);
    if (!p.before || !p.after) {
      if (!p.problems.length) scrapeFailures.push(`Prometheus gave no snapshot ${!p.before ? "before the first send" : "after the drain"}`);
    } else {
      for (const iid of iids) {
        const db = direct.before.engines[iid];
        const da = direct.after.engines[iid];
        const pb = p.before.engines[iid];
        const pa = p.after.engines[iid];
        // A reset engine's deltas mean nothing on either side; the reset is its cause.
        if (!db || !da || engineResets(db, da).length) continue;
        const directD = deltas(engineSeries(db), engineSeries(da));
        const name = `Prometheus agrees with /metrics on ${iid}`;
        if (!pb || !pa) {
          checks.push({ name, client: directD["vllm:generation_tokens_total"], server: null, ok: false, detail: `Prometheus holds no series for ${iid} ${!pb ? "before" : "after"} the point` });
          scrapeFailures.push(`Prometheus holds no series for engine ${iid} ${!pb ? "before" : "after"} the point`);
          continue;
        }
        const promD = deltas(engineSeries(pb), engineSeries(pa));
        const differ = deltaDisagreements(directD, promD);
        checks.push({ name, client: directD["vllm:generation_tokens_total"], server: promD["vllm:generation_tokens_total"], ok: !differ.length, detail: differ.length ? differ.join("; ") : "every counted series moved by the same amount (figures: Δvllm:generation_tokens_total)" });
        if (differ.length) scrapeFailures.push(`Prometheus' deltas for engine ${iid} differ from its /metrics: ${differ.join("; ")}`);
      }
      if (rb && ra && !routerResets(rb, ra).length) {
        const directD = deltas(routerSeries(rb), routerSeries(ra));
        const name = "Prometheus agrees with /metrics on the router";
        if (!p.before.router || !p.after.router) {
          checks.push({ name, client: directD.narwhal_offered_total, server: null, ok: false, detail: "Prometheus holds no router series" });
          scrapeFailures.push("Prometheus holds no router series for the point");
        } else {
          const promD = deltas(routerSeries(p.before.router), routerSeries(p.after.router));
          const differ = deltaDisagreements(directD, promD);
          checks.push({ name, client: directD.narwhal_offered_total, server: promD.narwhal_offered_total, ok: !differ.length, detail: differ.length ? differ.join("; ") : "every router counter moved by the same amount (figures: Δnarwhal_offered_total)" });
          if (differ.length) scrapeFailures.push(`Prometheus' deltas for the router differ from its /metrics: ${differ.join("; ")}`);
        }
      }
    }
  }

  for (const f of scrapeFailures) causes.push(`failed scrape: ${f}`);
  if (o.listenerProblem) causes.push(`listener conflict: ${o.listenerProblem}`);
  for (const r of resets) causes.push(`counter reset: ${r} (a restart inside the point invalidates it)`);
  const failed = checks.filter((c) => !c.ok);
  if (failed.length && !causes.length) {
    causes.push(`records disagree: ${failed.map((c) => `${c.name}: client ${c.client}, server ${c.server ?? "unavailable"} (${c.detail})`).join("; ")}`);
  }
  return { status: causes.length ? "unreconciled" : "reconciled", causes, checks, tolerance };
}
