/**
 * Profile provider methods, loaded at call time by resource.ts (through dynamic-providers/shim.ts).
 *
 * - check:  validates the inputs and the sweep's minimums before anything remote is touched;
 * - create: adopts the engine's row from `adopt` (a store measured before this stack) when it binds the
 *           live generation and its sidecar entry agrees (lib/profiling adoptionFor), recording where it
 *           came from; otherwise measures the engine (lib/profiling Profiler) from the router host's network position when
 *           `via` is set (an SSH local forward through the router host), binds the row to the verified
 *           attestation (or the live process identity without one), and keeps every raw observation as
 *           the sidecar entry `engine-samples.json` in an evidence record. A row is accepted only within
 *           the preflight's fit limits (lib/profiling fit-limits.ts): a fit over them is measured again,
 *           up to `fitAttempts` sweeps, each its own record, then create fails naming engine, figure,
 *           value and limit. A stop condition still records what was seen (verdict fail), then rejects
 *           naming the record;
 * - diff:   replaces when what the profile was measured against changed (engine, URL, model, generation,
 *           attestation, plan, sweep, limit), or when its row breaks the preflight's fit limits;
 *           credentials, tunnel, timeouts, labels and tries only update. An SLO is not an input at all;
 * - read:   the profile is a measurement of the past: nothing is re-probed;
 * - delete: nothing remote (the store resource owns the files on the router host).
 */
import type * as pulumi from "@pulumi/pulumi";
import { withHostKeyOf } from "../../lib/ssh/host-key";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import { fitProblems, NARWHAL_FIT_LIMITS } from "../../lib/profiling/fit-limits";
import { adoptedProfile, bindingOf, profileResult, sweptRow, type ProfileAdoption, type ProfileFitTry, type ProfileResult } from "../../lib/profiling/engine-profile";
import { DEFAULT_FIT_ATTEMPTS, measureWithinLimits } from "../../lib/profiling/accept";
import { emptyRecord, Profiler, type MeasureRecord } from "../../lib/profiling/measure";
import { ProfileError } from "../../lib/profiling/errors";
import { contentionGauge, type ContentionGauge } from "../../lib/profiling/contention";
import { resampleBrief, resampledFigures, withResamples, type ResampleSummary, type TrafficWitness } from "../../lib/profiling/resample";
import { evidenceProvider, schemaFailures } from "../evidence-provider";
import { hasUnknown } from "../../lib/unknown";
import { HttpJournal, currentHttpJournal, withHttpJournal } from "../../lib/evidence/http-journal";
import { profileHttp } from "../../lib/profiling/engine-http";
import { countedClient } from "../../lib/profiling/counted-client";
import { loadOf, witness, type Reservation } from "../../lib/engine/reservation";
import { settledLoad } from "../../lib/engine/settled-load";
import { sweepReservation } from "../../lib/profiling/reservation";
import { trafficWitness } from "../../lib/profiling/traffic";
import type { EngineClient } from "../../lib/profiling/client";
import { withRoutes } from "../preflight/routes";
import { profileInputs, type ProfileInputs, type ProfileOutputs } from "./schema";

export const MEASURED_AGAINST = ["engineId", "url", "servedName", "generationDigest", "processStartTime", "version", "attestationDigest", "launchDigest", "planSha256", "sweep", "maxNumSeqs"] as const;
// `adopt` only matters when the profile is created: a store named later never replaces a measured row.
// The limits replace a profile only when its row breaks the new ones (limitsReplace); how many tries a
// create may take never changes what was measured.
export const UPDATABLE = ["hostAlias", "apiKey", "via", "viaPrivateKey", "viaPassword", "probeTimeoutS", "requestTimeoutS", "stack", "adopt", "fitLimits", "fitAttempts"] as const;

/**
 * A recorded row the preflight's profile gate would now reject is replaced (re-measured), whether the
 * limits moved or the row was accepted before the Profile applied them: otherwise every `up` would
 * fail at the preflight on the same row until someone ran `--replace` by hand.
 */
export function limitsReplace(olds: Partial<ProfileOutputs>, news: ProfileInputs): boolean {
  if (!olds.row || hasUnknown(news.fitLimits)) return false;
  return fitProblems(olds.row, news.fitLimits ?? NARWHAL_FIT_LIMITS).length > 0;
}

/** Every refusal of the inputs, each naming its property; exported for tests. */
export const inputFailures = (news: Record<string, unknown>): pulumi.dynamic.CheckFailure[] => schemaFailures(profileInputs, news);

async function record(i: ProfileInputs, entry: Record<string, unknown>, startedAt: string, verdict: { status: "pass" | "fail"; reasons: string[] }, observations: Record<string, unknown>) {
  const store = providerEvidence(i.stack!, [i.apiKey, i.viaPrivateKey, i.viaPassword]);
  const artifact = await store.artifact("profile", "engine-samples.json", JSON.stringify(entry, null, 2) + "\n");
  const written = await store.record({
    kind: "profile",
    subject: { kind: "engine", alias: i.engineId },
    inputs: JSON.parse(JSON.stringify(Object.fromEntries(MEASURED_AGAINST.map((k) => [k, i[k]])))),
    // Every request this create has sent so far, each path summarised (a sweep sends thousands).
    commands: currentHttpJournal()?.commands() ?? [],
    startedAt,
    endedAt: new Date().toISOString(),
    observations: JSON.parse(JSON.stringify(observations)),
    verdict,
    artifacts: [artifact],
  });
  return { artifact: { relativePath: artifact.relativePath, sha256: artifact.sha256 }, evidence: { relativePath: written.relativePath, digest: written.digest } };
}

/** One sweep, not yet judged against the limits: the row and everything create keeps of it. */
type Swept = ReturnType<typeof sweptRow> & Pick<ProfileResult, "maxModelLen" | "effectiveSweep"> & { startedAt: string; wallSeconds: number; resampled?: ResampleSummary; reservation: Reservation };

/**
 * Runs `sweep` on a client that counts its own completions, between two reads of the engine's load, with
 * a witness of each sample's traffic: what the engine served besides the sweep's own samples is its
 * reservation (lib/profiling/reservation.ts). A closing read that fails leaves the reservation unproven,
 * never the sweep lost.
 */
async function reservedSweep<T extends { resampled?: ResampleSummary }>(engineId: string, http: EngineClient, probeTimeoutS: number, sweep: (c: EngineClient, traffic: TrafficWitness) => Promise<T>): Promise<{ value: T; reservation: Reservation }> {
  const readLoad = async () => {
    const r = await http.get("/metrics", probeTimeoutS);
    if (r.status !== 200) throw new Error(`GET /metrics answered ${r.status}`);
    return loadOf(r.body, http.label);
  };
  const before = await readLoad();
  const counted = countedClient(http);
  const value = await sweep(counted, trafficWitness(engineId, readLoad, counted));
  try {
    const after = await settledLoad(readLoad, before, { own: counted.finished() });
    return { value, reservation: sweepReservation(witness(engineId, before, after, counted.finished()), value.resampled) };
  } catch (err) {
    return { value, reservation: { idle: false, engines: [], reasons: [`engine ${engineId}: its load could not be read after the sweep (${(err as Error).message}), so its reservation is not proven`] } };
  }
}

/** The event-loop monitor's period: short enough to see a lateness within one prefill sample. */
const LOOP_RESOLUTION_MS = 5;

/**
 * The contention of this machine, which times every request (with `via` the tunnel's local end is here):
 * the profiler's event-loop lateness, and PSI's CPU pressure where the kernel has it (lib/profiling/contention.ts).
 */
function machineContention(): { gauge: ContentionGauge; close(): void } {
  const fs = require("node:fs") as typeof import("node:fs");
  const { performance, monitorEventLoopDelay } = require("node:perf_hooks") as typeof import("node:perf_hooks");
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  const gauge = contentionGauge({ loop, resolutionMs: LOOP_RESOLUTION_MS, now: () => performance.now() / 1000, readPsi: () => fs.readFileSync("/proc/pressure/cpu", "utf8") });
  return { gauge, close: () => loop.disable() };
}

/** One full sweep of the engine. A stop condition records what was seen (verdict fail) and rejects naming the record. */
async function sweepOnce(i: ProfileInputs, binding: ReturnType<typeof bindingOf>, label: string, log?: (line: string) => void): Promise<Swept> {
  const startedAt = new Date().toISOString();
  const t0 = Date.now();
  const raw: MeasureRecord = emptyRecord();
  const contention = machineContention();
  try {
    const { value: m, reservation } = await withRoutes(i, [{ url: i.url }], async ([{ url: base }]) => {
      currentHttpJournal()?.name(base, `engine ${i.engineId}`);
      const http = profileHttp(base, i.apiKey, label, Math.max(...i.sweep.decodeConcurrency, i.maxNumSeqs ?? 1) + 2);
      try {
        const options = { iid: i.engineId, model: i.servedName, sweep: i.sweep, maxNumSeqs: i.maxNumSeqs, processStartTime: i.processStartTime, probeTimeoutS: i.probeTimeoutS, requestTimeoutS: i.requestTimeoutS, log, contention: contention.gauge };
        return await reservedSweep(i.engineId, http, i.probeTimeoutS, (client, traffic) => new Profiler(client, { ...options, traffic }, raw).run());
      } finally {
        await http.close();
      }
    });
    return { ...sweptRow(i, binding, m, raw), maxModelLen: m.maxModelLen, effectiveSweep: m.sweep, startedAt, wallSeconds: (Date.now() - t0) / 1000, ...(m.resampled ? { resampled: m.resampled } : {}), reservation };
  } catch (err) {
    const message = (err as Error).message;
    let where = "";
    if (i.stack) {
      const kept = await record(i, { ...raw, generation_evidence: binding.evidence, error: raw.error ?? message }, startedAt, { status: "fail", reasons: [message] }, { stoppedAt: new Date().toISOString() }).catch(() => undefined);
      if (kept) where = ` (raw observations kept as ${kept.evidence.relativePath})`;
    }
    const code = err instanceof ProfileError ? err.code : (err as { code?: string }).code === "NARWHAL_ENGINE_GONE" ? "NARWHAL_ENGINE_GONE" : "NARWHAL_PROFILE_PROBE";
    throw withResamples(new ProfileError(code, `profile of ${label}: ${message}${where}`), raw.resampled);
  } finally {
    contention.close();
  }
}

/**
 * Measures one engine until a sweep's fit is within the preflight's limits (lib/profiling
 * measureWithinLimits), keeping every sweep as its own evidence record; exported for tests, which call
 * it as the provider host would.
 */
export async function measureProfile(i: ProfileInputs, log?: (line: string) => void): Promise<ProfileResult> {
  const t0 = Date.now();
  const binding = bindingOf(i);
  const label = `engine ${i.engineId} at ${i.url}${i.via ? ` (through router host ${i.via.alias})` : ""}`;
  const tries: ProfileFitTry[] = [];
  const kept = new Map<number, Awaited<ReturnType<typeof record>>>();
  let accepted: Swept;
  try {
    ({ accepted } = await measureWithinLimits<Swept>({
      engineId: i.engineId,
      limits: i.fitLimits ?? NARWHAL_FIT_LIMITS,
      attempts: i.fitAttempts ?? DEFAULT_FIT_ATTEMPTS,
      measure: () => sweepOnce(i, binding, label, log),
      rowOf: (s) => s.row,
      resamplesOf: (s) => s.resampled,
      kept: async ({ attempt, result: s, problems }) => {
        const reasons = problems.map((p) => p.message);
        const resampled = s.resampled ? `; ${resampleBrief(s.resampled)}` : "";
        if (reasons.length) log?.(`engine ${i.engineId}: try ${attempt} over the preflight's limits (${reasons.join("; ")}${resampled}); measuring again`);
        else if (s.resampled?.retaken) log?.(`engine ${i.engineId}: try ${attempt} within the limits${resampled}`);
        const observations = { attempt, row: s.row, fitErrors: s.fitErrors, fitLimits: i.fitLimits ?? NARWHAL_FIT_LIMITS, maxModelLen: s.maxModelLen, wallSeconds: s.wallSeconds, ...(s.resampled ? { resampled: s.resampled } : {}), reservation: s.reservation };
        const written = i.stack ? await record(i, { ...s.entry }, s.startedAt, { status: reasons.length ? "fail" : "pass", reasons }, observations) : undefined;
        if (written) kept.set(attempt, written);
        if (!s.reservation.idle) log?.(`engine ${i.engineId}: try ${attempt} was not reserved: ${s.reservation.reasons.join("; ")}`);
        tries.push({ attempt, fitErrors: s.fitErrors, problems: reasons, reserved: s.reservation.idle, ...(s.resampled ? { resampled: resampledFigures(s.resampled) } : {}), ...(written ? { evidence: written.evidence } : {}) });
      },
    }));
  } catch (err) {
    if (err instanceof ProfileError && err.code === "NARWHAL_PROFILE_LIMIT" && tries.length) {
      const records = tries.map((t) => t.evidence?.relativePath).filter((p): p is string => !!p);
      throw new ProfileError(err.code, `${err.message}${records.length ? `\nevery try is kept as evidence: ${records.join(", ")}` : ""}`);
    }
    throw err;
  }
  // The accepted try's record: keyed by its attempt, which counts the sweeps a prefill stop ended too.
  const last = kept.get(tries[tries.length - 1].attempt);
  const { row, fitErrors, maxModelLen, effectiveSweep, reservation } = accepted;
  // Every try's time: what this engine's profile cost the up.
  const wallSeconds = (Date.now() - t0) / 1000;
  return profileResult({ row, bindingDigest: binding.digest, fitErrors, maxModelLen, effectiveSweep, measuredAt: accepted.startedAt, wallSeconds, fitTries: tries, reservation }, accepted.entry, last);
}

/**
 * The engine's row from `i.adopt` when it is still valid evidence for the live engine; else the reason
 * it is not. Nothing is sent to the engine either way.
 */
export async function adoptProfile(i: ProfileInputs): Promise<{ result: ProfileResult } | { reason: string }> {
  const source = i.adopt!;
  const startedAt = new Date().toISOString();
  const fs = require("node:fs") as typeof import("node:fs");
  let read: { store: Buffer; samples: Buffer; writtenAt: string };
  try {
    const [store, samples] = await Promise.all([fs.promises.readFile(source.storePath), fs.promises.readFile(source.samplesPath)]);
    read = { store, samples, writtenAt: (await fs.promises.stat(source.storePath)).mtime.toISOString() };
  } catch (err) {
    return { reason: `cannot read the store to adopt: ${(err as Error).message}` };
  }
  const a = adoptedProfile(i.engineId, bindingOf(i).digest, source, read, i.fitLimits ?? NARWHAL_FIT_LIMITS);
  if (a.reason !== undefined) return { reason: a.reason };
  const kept = i.stack ? await record(i, a.entry, startedAt, { status: "pass", reasons: [] }, a.observations) : undefined;
  return { result: profileResult(a.facts, a.entry, kept) };
}

/** Adopts when `adopt` allows it, else measures; the outcome says which and why. */
export async function profileEngine(i: ProfileInputs, log?: (line: string) => void): Promise<ProfileResult> {
  if (!i.adopt) return measureProfile(i, log);
  const adopted = await adoptProfile(i);
  if ("result" in adopted) return adopted.result;
  log?.(`engine ${i.engineId}: not adopted (${adopted.reason}); measuring`);
  const adoption: ProfileAdoption = { verdict: "measured", reason: adopted.reason, source: i.adopt };
  return { ...(await measureProfile(i, log)), adoption };
}

export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<ProfileInputs, ProfileOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: UPDATABLE,
  inputs: profileInputs,
  // State written before the limits were inputs was held to the defaults: absent is the default, not a change.
  // A re-pinned router host key alone changes nothing here (lib/ssh/host-key.ts, withHostKeyOf).
  compared: (olds, news) => ({
    olds: { ...olds, fitLimits: olds.fitLimits ?? NARWHAL_FIT_LIMITS, fitAttempts: olds.fitAttempts ?? DEFAULT_FIT_ATTEMPTS },
    news: {
      ...news,
      ...(news.via === undefined ? {} : { via: withHostKeyOf(news.via, olds.via) }),
      fitLimits: news.fitLimits ?? NARWHAL_FIT_LIMITS,
      fitAttempts: news.fitAttempts ?? DEFAULT_FIT_ATTEMPTS,
    },
  }),
  addition: (olds, news) => ({ replaces: limitsReplace(olds, news) ? ["fitLimits"] : [] }),

  async create(inputs) {
    const result = await withHttpJournal(new HttpJournal({ [inputs.url]: `engine ${inputs.engineId}` }), () => profileEngine(inputs));
    const outs: ProfileOutputs = { ...inputs, ...result };
    return { id: `${inputs.engineId}-profile-${result.profileDigest.slice(7, 19)}`, outs };
  },
});
