/**
 * Preflight provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - check:  the fleet document, engines, pair selection and repeats, before anything remote is touched;
 * - create: runs narwhal-check's gates (lib/preflight) against the engines from the router host's
 *           network position (SSH local forwards when `via` is set), keeps every gate's lines, every
 *           probe and the failing pairs' engine logs as evidence with the run's status as narwhal-check
 *           decides it (pass, degraded with the skipped gates and why, fail) and its warnings; fails
 *           naming the gate and its engines when a gate fails, and on a degraded run only with `strict`;
 * - diff:   the fleet document (SLOs, deadlines, budgets, engines), every engine's generation,
 *           attestation and profile, the store, pair selection and repeats replace it; the schedule,
 *           credentials and tunnel only update (the schedule never changes a verdict); `strict` turned
 *           on over a degraded run replaces it;
 * - read:   a preflight is a measurement of the past: nothing is re-probed.
 */
import { HttpJournal, withHttpJournal } from "../../lib/evidence/http-journal";
import { nameEngines, withRoutes } from "./routes";
import type { EvidenceCommand } from "../../lib/evidence/record";
import type * as pulumi from "@pulumi/pulumi";
import { sha256Json } from "../../lib/digest";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import { documentEngines, observerSettings, planOf } from "../../lib/preflight/document-plan";
import { enginesNamed, failureSummary, preflightVerdict, strictReplaces } from "../../lib/preflight/outcome";
import { failedGates } from "../../lib/preflight/types";
import { runPreflight, type PreflightOutcome } from "../../lib/preflight/run";
import { runSummary, skippedSummary, stopsDeployment, type RunSummary } from "../../lib/preflight/status";
import { evidenceProvider, schemaFailures } from "../evidence-provider";
import { httpObserver, type ObservedEngine } from "../../lib/preflight/http-observer";
import { engineLogTails, type LogTail } from "./engine-logs";
import { preflightInputs, type PreflightInputs, type PreflightOutputs } from "./schema";

export const MEASURED_AGAINST = ["fleetDocument", "engines", "profiles", "profileStoreDigest", "fabricEdges", "pairs", "repeats"] as const;
// `strict` never changes what was measured; turned on over a degraded run it replaces (strictReplaces).
export const UPDATABLE = ["stack", "schedule", "strict", "apiKey", "via", "viaPrivateKey", "viaPassword"] as const;

/** Every refusal of the inputs, each naming its property; exported for tests. */
export const inputFailures = (news: Record<string, unknown>): pulumi.dynamic.CheckFailure[] => schemaFailures(preflightInputs, news);

async function record(i: PreflightInputs, outcome: PreflightOutcome, summary: RunSummary, fleetDocumentDigest: string, startedAt: string, tails: LogTail[] = [], commands: EvidenceCommand[] = []) {
  const store = providerEvidence(i.stack, [i.apiKey, i.viaPrivateKey, i.viaPassword, ...Object.values(i.engineHostSecrets ?? {}).flatMap((s) => [s.privateKey, s.password])]);
  const artifacts = [await store.artifact("preflight", "transfers.json", JSON.stringify(outcome.transfers, null, 2) + "\n"), await store.artifact("preflight", "fleet.json", JSON.stringify(i.fleetDocument, null, 2) + "\n")];
  // Each engine a failed line names: its log tail as read once the gates ran (engine-logs.ts).
  const engineLogs = [];
  for (const t of tails) {
    const log = await store.artifact("preflight", `engine-logs/${t.engineId}.log`, t.text);
    artifacts.push(log);
    engineLogs.push({ engineId: t.engineId, source: t.source, log: log.relativePath });
  }
  const written = await store.record({
    kind: "preflight",
    subject: { kind: "fleet", alias: i.stack },
    inputs: JSON.parse(JSON.stringify({ fleetDocumentDigest, engines: i.engines, profileStoreDigest: i.profileStoreDigest, fabricEdges: i.fabricEdges, pairs: i.pairs, repeats: i.repeats, schedule: i.schedule, strict: i.strict ?? false })),
    commands,
    startedAt,
    endedAt: new Date().toISOString(),
    observations: JSON.parse(JSON.stringify({ gates: outcome.gates, rounds: outcome.rounds, status: summary.status, narwhal: summary.narwhal, skipped: summary.skipped, warnings: summary.warnings, engineLogs })),
    verdict: preflightVerdict(outcome.gates, summary.status, summary.skipped, i.strict ?? false),
    artifacts,
  });
  return { relativePath: written.relativePath, digest: written.digest };
}

/** Runs the gates once; exported for tests, which call it as the provider host would. */
export async function runGates(i: PreflightInputs, recentLogs?: (iid: string) => Promise<string>): Promise<Omit<PreflightOutputs, keyof PreflightInputs>> {
  const startedAt = new Date().toISOString();
  const t0 = Date.now();
  const doc = i.fleetDocument;
  const fleetDocumentDigest = sha256Json(doc);
  const plan = planOf(doc, i.profiles, { pairs: i.pairs, repeats: i.repeats, schedule: i.schedule });
  const recorded = new Map(i.engines.map((e) => [e.engineId, e]));
  const engines: ObservedEngine[] = documentEngines(doc).map((e) => ({ iid: e.iid, url: e.url, ...(e.attestationUrl ? { attestationUrl: e.attestationUrl } : {}), attestationDigest: recorded.get(e.iid)?.attestationDigest }));
  // With the engines' log places and host logins, a failed transfer keeps both engines' logs as it fails,
  // and every engine a failed line names has its log tail kept after the run (the runbook's window).
  const tails = i.engineLogs?.length ? engineLogTails(i.engineLogs, i.engineHostSecrets) : undefined;
  const fromHosts = recentLogs ?? (tails ? async (iid: string) => (await tails.tail(iid)).text : undefined);
  let outcome: PreflightOutcome;
  const logTails: LogTail[] = [];
  const journal = new HttpJournal({});
  try {
    outcome = await withHttpJournal(journal, () =>
      withRoutes(i, engines, async (routed) => {
        nameEngines(journal, routed);
        const observer = httpObserver({ engines: routed, ...observerSettings(doc, i.apiKey), ...(fromHosts ? { recentLogs: fromHosts } : {}) });
        try {
          return await runPreflight(plan, observer);
        } finally {
          await observer.close();
        }
      }),
    );
    if (tails) {
      const failedLines = failedGates(outcome.gates).flatMap((g) => g.lines.filter((l) => l.status === "fail").map((l) => l.message));
      const named = new Set(failedLines.flatMap((m) => enginesNamed(m, i.engines.map((e) => e.engineId))));
      for (const id of named) logTails.push(await tails.tail(id));
    }
  } finally {
    await tails?.close();
  }
  const summary = runSummary(outcome.gates);
  const evidence = i.stack ? await record(i, outcome, summary, fleetDocumentDigest, startedAt, logTails, journal.commands()) : undefined;
  const kept = evidence ? ` (gate lines, probes and engine logs kept as ${evidence.relativePath})` : "";
  if (summary.status === "fail") {
    throw new Error(`preflight failed: ${failureSummary(outcome.gates)}; the router is not started on it${kept}`);
  }
  if (stopsDeployment(summary.status, i.strict ?? false)) {
    throw new Error(`preflight degraded and preflight.strict is on: skipped ${skippedSummary(summary.skipped)}; the router is not started on it (declare what was skipped, or set preflight.strict false to accept a degraded run)${kept}`);
  }
  return {
    fleetDocumentDigest,
    gates: outcome.gates,
    status: summary.status,
    narwhal: summary.narwhal,
    skipped: summary.skipped,
    warnings: summary.warnings,
    transfers: outcome.transfers.map(({ logs: _logs, ...t }) => t),
    rounds: outcome.rounds,
    ...(evidence ? { evidence } : {}),
    ranAt: startedAt,
    wallSeconds: (Date.now() - t0) / 1000,
  };
}

export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<PreflightInputs, PreflightOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: UPDATABLE,
  inputs: preflightInputs,
  // Absent `strict` (state from before the setting) is false, not a change.
  compared: (olds, news) => ({ olds: { ...olds, strict: olds.strict ?? false }, news: { ...news, strict: news.strict ?? false } }),
  addition: (olds, news) => ({ replaces: strictReplaces(olds, news) ? ["strict"] : [] }),

  async create(inputs) {
    const result = await runGates(inputs);
    const outs: PreflightOutputs = { ...inputs, ...result };
    return { id: `preflight-${result.fleetDocumentDigest.slice(7, 19)}-${Date.parse(result.ranAt)}`, outs };
  },
});
