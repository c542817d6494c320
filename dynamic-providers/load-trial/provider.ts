/**
 * LoadTrial provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - check:  the point (rate, count, arrival, mix) and, once the profile rows are known, the point against
 *           the range they cover, before anything remote is touched;
 * - create: logs in to the router host, forwards loopback ports to the router's private address, every
 *           engine and Prometheus (never a direct connection to a private address), runs the point
 *           (lib/trial/run.ts) and keeps every request, summary, snapshot and the tunnel's log as one
 *           `load-trial` record; a point that could not run keeps what it saw (verdict fail) and fails;
 *           a point only the client machine disturbed runs again, each try its own record (tries.ts);
 * - diff:   the point, the SLO, the engines' generations, the profile store and the serving router
 *           replace it (the next point runs); credentials, bounds and judgement thresholds only update;
 * - update: re-judges the kept figures against a new goodput fraction or prediction bound.
 */
import type * as pulumi from "@pulumi/pulumi";
import { evidenceProvider, schemaFailures } from "../evidence-provider";
import { loadTrialInputs, type LoadTrialInputs, type LoadTrialOutputs } from "./schema";
import { departure, throughRouter } from "../../lib/trial/predict";
import { fetchGet } from "../../lib/trial/http";
import { judgePoint } from "../../lib/trial/verdict";
import { trialArtifacts, trialRecordInputs, trialVerdict } from "../../lib/trial/record";
import { hostProbes } from "../../lib/trial/host-probes";
import { runTrial, type HostProbes, type TrialOutcome, type TrialRoutes } from "../../lib/trial/run";
import { disturbedClientOnly, reasonsAfterTries, untilUndisturbed, type DisturbedTry } from "../../lib/trial/tries";
import { SshSession } from "../../lib/ssh/client";
import { OPERATE, sshTarget } from "../../lib/ssh/login";
import { readLogin } from "../../lib/ssh/stored-login";
import { localForward } from "../../lib/ssh/forward";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import { currentHttpJournal, HttpJournal, withHttpJournal } from "../../lib/evidence/http-journal";
import type { EvidenceCommand } from "../../lib/evidence/record";

export const MEASURED_AGAINST = ["point", "model", "slo", "routerUrl", "routerPid", "routerStartedAt", "fleetDocumentDigest", "engines", "profileStoreDigest"] as const;
export const UPDATABLE = ["stack", "prometheus", "scrapeIntervalS", "routerHost", "via", "viaPrivateKey", "viaPassword", "hosts", "hostPrivateKeys", "hostPasswords", "requestTimeoutS", "drainTimeoutS", "minGoodFraction", "predictionBound", "routerOverheadS", "routerBackendPort"] as const;

/** Every refusal of the inputs, each naming its property; exported for tests. */
export const inputFailures = (news: Record<string, unknown>): pulumi.dynamic.CheckFailure[] => schemaFailures(loadTrialInputs, news);

interface Opened {
  routes: TrialRoutes;
  hosts: HostProbes;
  tunnelLog: string[];
  /** What ran on the hosts (socket summaries, the listener check), for the record's commands. */
  commands: EvidenceCommand[];
  close(): Promise<void>;
}

/** The router host's login and one loopback forward per private address the trial reads. */
async function openRoutes(i: LoadTrialInputs): Promise<Opened> {
  const tunnelLog: string[] = [];
  const commands: EvidenceCommand[] = [];
  const note = (line: string) => tunnelLog.push(`${new Date().toISOString()} ${line}`);
  const session = await SshSession.open(sshTarget(readLogin(i.via, { privateKey: i.viaPrivateKey, password: i.viaPassword }), OPERATE));
  note(`ssh session to ${i.routerHost} (${i.via.user}@${i.via.host}:${i.via.port})`);
  const forwards: Array<{ close(): Promise<void> }> = [];
  const forward = async (what: string, hostPort: string): Promise<string> => {
    const u = new URL(`http://${hostPort}`);
    const host = u.hostname.replace(/^\[|\]$/g, "");
    const f = await localForward(session, host, Number(u.port || 80), (line) => note(`${what}: ${line}`));
    forwards.push(f);
    currentHttpJournal()?.name(`http://127.0.0.1:${f.port}`, what);
    note(`${what}: forward 127.0.0.1:${f.port} -> ${hostPort} via ${i.routerHost}`);
    return `http://127.0.0.1:${f.port}`;
  };
  const close = async () => {
    await Promise.all(forwards.map((f) => f.close()));
    session.close();
    note("tunnel closed");
  };
  try {
    const routerBase = await forward("router", new URL(i.routerUrl).host);
    const engines = [];
    for (const e of i.engines) engines.push({ iid: e.engineId, role: e.role, base: await forward(`engine ${e.engineId}`, new URL(e.url).host) });
    const prometheus = i.prometheus ? await forward("prometheus", i.prometheus) : undefined;
    const login = (h: LoadTrialInputs["hosts"][number]) => SshSession.open(sshTarget(readLogin(h.login, { privateKey: i.hostPrivateKeys?.[h.alias], password: i.hostPasswords?.[h.alias] }), OPERATE));
    const router = { alias: i.routerHost, session, port: i.routerBackendPort ?? Number(new URL(i.routerUrl).port || 80), pid: i.routerPid };
    const hosts = hostProbes({ router, hosts: i.hosts, login }, commands);
    return { routes: { router: routerBase, engines, ...(prometheus ? { prometheus } : {}) }, hosts, tunnelLog, commands, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** One try of the point, kept as its own record; a try that could not run throws, after keeping what it saw. */
async function runOnce(i: LoadTrialInputs, before: readonly DisturbedTry[], opts: { subject?: string; log?: (line: string) => void }) {
  const startedAt = new Date().toISOString();
  const t0 = Date.now();
  const store = providerEvidence(i.stack, [i.viaPrivateKey, i.viaPassword, ...Object.values(i.hostPrivateKeys ?? {}), ...Object.values(i.hostPasswords ?? {})]);
  let opened: Opened | undefined;
  let outcome: TrialOutcome | undefined;
  let failure: Error | undefined;
  const journal = new HttpJournal({});
  try {
    await withHttpJournal(journal, async () => {
      opened = await openRoutes(i);
      const profiles = i.engines.map((e) => ({ iid: e.engineId, role: e.role, row: e.row }));
      outcome = await runTrial(fetchGet, opened.routes, opened.hosts, { ...i, profiles, requestIdPrefix: `trial-${i.point.id}-${t0.toString(36)}-`, log: opts.log });
    });
  } catch (e) {
    failure = e as Error;
  } finally {
    await opened?.close().catch(() => undefined);
  }
  const routes = opened?.routes;
  const forwards = routes ? ["router", ...routes.engines.map((e) => `engine ${e.iid}`), ...(routes.prometheus ? ["prometheus"] : [])] : undefined;
  const artifacts = [];
  for (const [name, text] of trialArtifacts(i, forwards, opened?.tunnelLog, outcome)) artifacts.push(await store.artifact("load-trial", name, text));
  // The try's reasons name the disturbed tries before it, in its record as in the outputs.
  const tried = outcome && { ...outcome, observations: { ...outcome.observations, reasons: reasonsAfterTries(outcome.observations.reasons, before, disturbedClientOnly(outcome.observations.reconciliation)) } };
  const o = tried?.observations;
  const written = await store.record({
    kind: "load-trial",
    subject: { kind: "fleet", alias: opts.subject ?? i.point.id },
    inputs: JSON.parse(JSON.stringify(trialRecordInputs(i))),
    commands: [...(opened?.commands ?? []), ...journal.commands()],
    startedAt,
    endedAt: new Date().toISOString(),
    observations: o ? JSON.parse(JSON.stringify(o)) : { error: failure?.message ?? "the point did not run" },
    verdict: trialVerdict(failure, tried),
    artifacts,
  });
  if (failure || !tried) throw new Error(`trial point ${i.point.id}: ${failure?.message ?? "did not run"} (what it saw is kept as ${written.relativePath})`);
  return { observations: tried.observations, window: { start: tried.run.start, end: tried.run.end }, evidence: { relativePath: written.relativePath, digest: written.digest }, startedAt };
}

/**
 * Runs the point and keeps it, again while only the client machine disturbs it (lib/trial/tries.ts);
 * exported for tests and `npm run trial`, which call it as the provider host would.
 */
export async function runLoadTrial(i: LoadTrialInputs, opts: { subject?: string; log?: (line: string) => void } = {}): Promise<Omit<LoadTrialOutputs, keyof LoadTrialInputs>> {
  const failures = inputFailures(i);
  if (failures.length) throw new Error(`trial point ${i.point?.id ?? "?"}: ${failures.map((f) => f.reason).join("; ")}`);
  const t0 = Date.now();
  const log = (line: string) => opts.log?.(`trial ${i.point.id}: ${line}`);
  const { last, disturbed } = await untilUndisturbed((before) => runOnce(i, before, opts), log);
  const { verdict, reasons, summary, prediction, departure: off, range, reconciliation } = last.observations;
  return { verdict, reasons, summary, prediction, departure: off, range, reconciliation, window: last.window, evidence: last.evidence, disturbedTries: disturbed, ranAt: last.startedAt, wallSeconds: (Date.now() - t0) / 1000 };
}

/** A new goodput fraction or prediction bound re-judges the kept figures; nothing is sent again. */
export function rejudged(olds: LoadTrialOutputs, news: LoadTrialInputs): LoadTrialOutputs {
  const judged = judgePoint({ summary: olds.summary, reconciliation: olds.reconciliation, minGoodFraction: news.minGoodFraction, slo: news.slo });
  const reasons = reasonsAfterTries(judged.reasons, olds.disturbedTries ?? [], disturbedClientOnly(olds.reconciliation));
  const prediction = throughRouter(olds.prediction, news.routerOverheadS - (olds.routerOverheadS ?? 0));
  return { ...olds, ...news, verdict: judged.verdict, reasons, prediction, departure: departure(prediction, olds.summary, news.predictionBound) };
}

export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<LoadTrialInputs, LoadTrialOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: UPDATABLE,
  inputs: loadTrialInputs,

  async create(inputs) {
    const result = await runLoadTrial(inputs);
    return { id: `load-trial-${inputs.point.id}-${Date.parse(result.ranAt)}`, outs: { ...inputs, ...result } };
  },

  update: rejudged,
});
