/**
 * Calibration provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - check:  engines, lengths, sample counts and the observation bound against the document's
 *           deadline and request timeout, before anything remote is touched;
 * - create: with `adopt`, first judges that calibration (lib/preflight judgeCalibration) against each
 *           engine's live identity and adopts it, sampling nothing, when every binding holds; else (or
 *           without `adopt`) samples every role-permitted directed path at every input length from the router host's
 *           network position (the preflight's transport), keeps every attempt, the fleet document, the
 *           probe code and each engine's process identity as evidence, proves from each engine's own
 *           counters whether it served anything besides the samples (`reservation`), and proposes a deadline; fails
 *           naming the paths when a group falls short, an engine restarts mid-run or serves another
 *           context than its plan;
 * - diff:   model, runtime, engines (generation, attestation, transport, served context, roles),
 *           lengths and sample count replace it; the fleet document (SLO and deadline edits), the
 *           observation bound, router overhead, schedule, credentials and tunnel only update; a
 *           record altered or gone on disk (seen by `read` on refresh) replaces it too, reason `evidence`;
 * - update: re-judges the client TTFT fit against the new document without new samples.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type * as pulumi from "@pulumi/pulumi";
import { sha256Json } from "../../lib/digest";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import { calibrationFigures, calibrationObservations, clientTtftRequirement, identityProblems, ttftRejudged, type CalibrationOrigin, type EngineIdentity } from "../../lib/preflight/calibration-outcome";
import { describeMismatches } from "../../lib/preflight/calibration-adopt";
import { documentEngines, timeoutsOf } from "../../lib/preflight/document-plan";
import { proposeDeadline, runCalibration, type CalibrationRun } from "../../lib/preflight/calibration-run";
import { validationPairs, type Pair } from "../../lib/preflight/pairs";
import type { CalibrationResult } from "../../lib/preflight/calibration";
import { evidenceProvider, schemaFailures } from "../evidence-provider";
import { nameEngines, withRoutes } from "../preflight/routes";
import { HttpJournal, withHttpJournal } from "../../lib/evidence/http-journal";
import type { EvidenceCommand } from "../../lib/evidence/record";
import { lookAtAdoption } from "./adopt";
import { httpSampler } from "../../lib/preflight/calibration-sampler";
import { windowReservation, windowStart } from "../../lib/engine/reservation-window";
import type { Reservation } from "../../lib/engine/reservation";
import { calibrationInputs, type CalibrationAdoption, type CalibrationInputs, type CalibrationOutputs } from "./schema";

export const MEASURED_AGAINST = ["model", "runtime", "engines", "inputLengths", "samplesPerGroup"] as const;
/**
 * The observation bound only decides when a stalled attempt counts as expired, and its default follows
 * the deadline: setting the proposed deadline (the runbook's next step) must not call for new samples.
 * The bound the samples were taken under stays in the outputs and the evidence.
 */
// `adopt` only matters when the calibration is created: a file named later never replaces measured samples.
export const UPDATABLE = ["stack", "fleetDocument", "observationBoundS", "maxFailuresPerGroup", "routerOverheadS", "schedule", "apiKey", "via", "viaPrivateKey", "viaPassword", "adopt"] as const;

const SAMPLER_SOURCE = "lib/preflight/calibration-sampler.ts";

/** Every refusal of the inputs, each naming its property; exported for tests. */
export const inputFailures = (news: Record<string, unknown>): pulumi.dynamic.CheckFailure[] => schemaFailures(calibrationInputs, news);

async function record(i: CalibrationInputs, fleetDocumentDigest: string, paths: Pair[], origin: CalibrationOrigin, identities: { before: EngineIdentity[]; after: EngineIdentity[] }, verdict: { status: "pass" | "fail"; reasons: string[] }, result: CalibrationResult | undefined, startedAt: string, commands: EvidenceCommand[] = []) {
  const store = providerEvidence(i.stack, [i.apiKey, i.viaPrivateKey, i.viaPassword]);
  const artifact = (name: string, value: unknown) => store.artifact("calibration", name, JSON.stringify(value, null, 2) + "\n");
  const run = "run" in origin ? origin.run : undefined;
  const artifacts = [
    // An adopted calibration keeps the file itself, byte for byte: its raw attempts are the samples.
    "bytes" in origin ? await store.artifact("calibration", "first-token-calibration.json", origin.bytes.toString("utf8")) : await artifact("samples.json", run?.samples ?? []),
    await artifact("fleet.json", i.fleetDocument),
    await artifact("identities.json", identities),
    ...("bytes" in origin ? [] : [await store.artifact("calibration", "sampler.ts", fs.readFileSync(path.join(process.cwd(), SAMPLER_SOURCE), "utf8"))]),
  ];
  const written = await store.record({
    kind: "calibration",
    subject: { kind: "fleet", alias: i.stack },
    inputs: JSON.parse(JSON.stringify({ fleetDocumentDigest, model: i.model, runtime: i.runtime, engines: i.engines, paths, inputLengths: i.inputLengths, samplesPerGroup: i.samplesPerGroup, observationBoundS: i.observationBoundS, schedule: i.schedule })),
    commands,
    startedAt,
    endedAt: new Date().toISOString(),
    observations: JSON.parse(JSON.stringify(calibrationObservations(origin, result))),
    verdict,
    artifacts,
  });
  return { relativePath: written.relativePath, digest: written.digest };
}

/** Samples once and proposes a deadline; exported for tests, which call it as the provider host would. */
export async function calibrateFleet(i: CalibrationInputs): Promise<Omit<CalibrationOutputs, keyof CalibrationInputs>> {
  const failures = inputFailures(i);
  if (failures.length) throw new Error(`calibration: ${failures.map((f) => f.reason).join("; ")}`);
  const startedAt = new Date().toISOString();
  const t0 = Date.now();
  const doc = i.fleetDocument;
  const fleetDocumentDigest = sha256Json(doc);
  const t = timeoutsOf(doc);
  const clientTtftRequirementS = clientTtftRequirement(doc)!;
  const paths = validationPairs(
    i.engines.map((e) => ({ id: e.engineId, role: e.role, pin: e.pin })),
    "mesh",
  );
  let adoption: CalibrationAdoption | undefined;
  if (i.adopt) {
    const look = await lookAtAdoption(i, paths, clientTtftRequirementS);
    if (look.judgement.ok) {
      const a = look.judgement.adopted;
      adoption = { verdict: "adopted", source: i.adopt, mismatches: [], capturedAt: a.capturedAt };
      const identities = { before: look.identities, after: look.identities };
      const evidence = i.stack ? await record(i, fleetDocumentDigest, paths, { adopted: a, adoption, bytes: look.bytes! }, identities, { status: "pass", reasons: [] }, a.result, startedAt) : undefined;
      return outputsOf({ fleetDocumentDigest, paths, result: a.result, currentDeadlineS: t.firstTokenS, clientTtftRequirementS, sampledUnderBoundS: a.observationBoundS, samples: a.completed, failedAttempts: 0, identities: look.identities, evidence, adoption, ranAt: a.capturedAt, wallSeconds: 0 });
    }
    adoption = { verdict: "measured", source: i.adopt, mismatches: look.judgement.mismatches };
  }
  const endpoints = documentEngines(doc).map((e) => ({ iid: e.iid, url: e.url }));
  const identities = { before: [] as EngineIdentity[], after: [] as EngineIdentity[] };
  let run: CalibrationRun | undefined;
  let reservation: Reservation | undefined;
  let problems: string[] = [];
  const journal = new HttpJournal({});
  await withHttpJournal(journal, () => withRoutes(i, endpoints, async (routed) => {
    nameEngines(journal, routed);
    const sampler = httpSampler({ engines: routed, model: i.model, apiKey: i.apiKey, timeouts: { healthS: t.healthS, prefillS: t.prefillS, tokenizeS: t.tokenizeS, observationBoundS: i.observationBoundS, requestS: t.requestS } });
    try {
      identities.before = await Promise.all(routed.map((e) => sampler.identity(e.iid)));
      problems = identityProblems(i.engines, identities.before, []);
      if (problems.length) return;
      const start = await windowStart(routed.map((e) => e.iid), sampler.load);
      run = await runCalibration({ paths, inputLengths: i.inputLengths, samplesPerGroup: i.samplesPerGroup, maxFailuresPerGroup: i.maxFailuresPerGroup, schedule: i.schedule }, sampler);
      reservation = await windowReservation(start, sampler.load, sampler.ownRequests);
      identities.after = await Promise.all(routed.map((e) => sampler.identity(e.iid)));
      problems = identityProblems(i.engines, identities.before, identities.after);
    } finally {
      await sampler.close();
    }
  }));
  let result: CalibrationResult | undefined;
  if (!problems.length && run) {
    try {
      result = proposeDeadline(run, { routerOverheadS: i.routerOverheadS, clientTtftS: clientTtftRequirementS, minSamples: i.samplesPerGroup });
    } catch (err) {
      problems = [(err as Error).message];
    }
  }
  const evidence = i.stack ? await record(i, fleetDocumentDigest, paths, { run, ...(adoption ? { adoption } : {}), ...(reservation ? { reservation } : {}) }, identities, { status: problems.length ? "fail" : "pass", reasons: problems }, result, startedAt, journal.commands()) : undefined;
  const notAdopted = adoption ? `; ${i.adopt!.path} was not adopted: ${describeMismatches(adoption.mismatches)}` : "";
  if (problems.length || !result) throw new Error(`calibration: ${problems.join("; ")}${evidence ? ` (every sample and failure kept as ${evidence.relativePath})` : ""}${notAdopted}`);
  return outputsOf({
    fleetDocumentDigest,
    paths,
    result,
    currentDeadlineS: t.firstTokenS,
    clientTtftRequirementS,
    sampledUnderBoundS: i.observationBoundS,
    samples: run!.samples.filter((s) => s.status === "completed").length,
    failedAttempts: run!.samples.filter((s) => s.status === "failed").length,
    identities: identities.after,
    evidence,
    adoption,
    reservation,
    ranAt: startedAt,
    wallSeconds: (Date.now() - t0) / 1000,
  });
}

type Facts = Pick<CalibrationOutputs, "fleetDocumentDigest" | "paths" | "currentDeadlineS" | "clientTtftRequirementS" | "sampledUnderBoundS" | "samples" | "failedAttempts" | "identities" | "ranAt" | "wallSeconds"> & {
  result: CalibrationResult;
  evidence: CalibrationOutputs["evidence"];
  adoption: CalibrationAdoption | undefined;
  reservation?: Reservation;
};

function outputsOf(f: Facts): Omit<CalibrationOutputs, keyof CalibrationInputs> {
  const { result, evidence, adoption, reservation, ...rest } = f;
  return { ...rest, ...calibrationFigures(result), ...(evidence ? { evidence } : {}), ...(adoption ? { adoption } : {}), ...(reservation ? { reservation } : {}) };
}

/** An SLO or deadline edit re-judges the fit from the kept figures; nothing is sampled again. */
export function rejudged(olds: CalibrationOutputs, news: CalibrationInputs): CalibrationOutputs {
  const doc = news.fleetDocument;
  return { ...olds, ...news, fleetDocumentDigest: sha256Json(doc), currentDeadlineS: timeoutsOf(doc).firstTokenS, ...ttftRejudged(olds, doc, news.routerOverheadS) };
}

export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<CalibrationInputs, CalibrationOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: UPDATABLE,
  inputs: calibrationInputs,

  async create(inputs) {
    const result = await calibrateFleet(inputs);
    return { id: `calibration-${result.fleetDocumentDigest.slice(7, 19)}-${Date.parse(result.ranAt)}`, outs: { ...inputs, ...result } };
  },

  update: rejudged,
});
