/**
 * What a preview can say before an `up` about the runbook evidence that `up` will keep. The
 * preview derives each runbook engine's launch plan as the `up` will (lib/adoption/preview-reads.ts)
 * and so makes the `up`'s own keep-or-replace decision; it reads the runbook sidecar's attestation and
 * judges the store rows and the calibration against it by the rules the `up` applies. What only the
 * `up` can check (the program's attestation contract, the calibration against the fleet document) is
 * named in the line. Each line says which evidence would be adopted and which will be measured, and why.
 */
import { adoptionFor, type AdoptSource } from "../profiling/adopt";
import { adoptionLimitReason, NARWHAL_FIT_LIMITS } from "../profiling/fit-limits";
import { attestationBindingDigest, identityGenerationDigest } from "../profiling/store";
import { runbookStanding, type RunbookDecision, type RunbookSurvey } from "../launch/runbook";
import { sidecarEndpoint } from "../attestation/sidecar";
import type { EngineSpec, FleetSpec } from "../config/types";

/** What a preview forecasts: the runbook engines it reads, the profiles it judges, and the calibration. */
export interface ForecastScope {
  readonly runbookEngines: ReadonlyArray<EngineSpec>;
  readonly profileEngines: ReadonlyArray<string>;
  readonly calibration: boolean;
}

type ScopeSpec = Pick<FleetSpec, "engines" | "profiling" | "calibration">;

/**
 * A forecast speaks only of what the next `up` creates. An engine the stack records (its last `engines`
 * output) runs under the program already, and any change to it shows in the preview's own diff. So:
 * every runbook engine not yet recorded (kept or replaced, and why), each new engine's profile while
 * profiling.adoptStore is set, and the calibration while calibration.adopt is set and the stack records
 * no engine (its first `up`). Undefined when there is nothing to say, so the preview reads nothing.
 */
export function forecastScope(spec: ScopeSpec, recorded: ReadonlySet<string>): ForecastScope | undefined {
  const fresh = spec.engines.filter((e) => !recorded.has(e.id));
  const scope: ForecastScope = {
    runbookEngines: fresh.filter((e) => e.runbookRun !== undefined),
    profileEngines: spec.profiling.adoptStore !== undefined ? fresh.map((e) => e.id) : [],
    calibration: spec.calibration.enabled && spec.calibration.adopt !== undefined && recorded.size === 0,
  };
  return scope.runbookEngines.length > 0 || scope.profileEngines.length > 0 || scope.calibration ? scope : undefined;
}

/**
 * Whether the config names anything a forecast could speak of (what a stack that records nothing yet
 * would forecast); without it the preview reads nothing, not even the stack's outputs.
 */
export function mayForecast(spec: ScopeSpec): boolean {
  return forecastScope(spec, new Set()) !== undefined;
}

/** The runbook sidecar's `/v1/attestation` answer, reduced to what evidence binds. */
export interface SidecarAnswer {
  readonly attestationDigest: string;
  readonly launchDigest: string | null;
  /** The engine the sidecar attests: `engine.version` and `engine.process_start_time_seconds`. */
  readonly version: string | null;
  readonly processStartS: number | null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Where the runbook's sidecar answers: launch.json's endpoint host and `attestation_port`. Narwhal writes
 * the engine URL it was given (http, with the engine's port, any path kept), so its origin is the engine URL.
 */
export function runbookAttestationUrl(s: RunbookSurvey): string | undefined {
  if (s.launchJson === undefined) return undefined;
  let plan: unknown;
  try {
    plan = JSON.parse(Buffer.from(s.launchJson, "base64").toString("utf8"));
  } catch {
    return undefined;
  }
  if (!isObject(plan) || typeof plan.endpoint !== "string" || !Number.isInteger(plan.attestation_port)) return undefined;
  const origin = /^http:\/\/(?:\[[^\]]+\]|[^/:]+):\d+/.exec(plan.endpoint);
  if (!origin) return undefined;
  try {
    return sidecarEndpoint(origin[0], plan.attestation_port as number).url;
  } catch {
    return undefined; // not a TCP port: no sidecar to ask
  }
}

/** The digests and engine identity of a `/v1/attestation` body, or what is wrong with it. */
export function parseSidecarAnswer(text: string): SidecarAnswer | { problem: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return { problem: `its answer is not JSON: ${(err as Error).message}` };
  }
  if (!isObject(v) || typeof v.attestation_digest !== "string") return { problem: "its answer carries no attestation_digest" };
  const engine = isObject(v.engine) ? v.engine : {};
  return {
    attestationDigest: v.attestation_digest,
    launchDigest: typeof v.launch_digest === "string" ? v.launch_digest : null,
    version: typeof engine.version === "string" ? engine.version : null,
    processStartS: typeof engine.process_start_time_seconds === "number" ? engine.process_start_time_seconds : null,
  };
}

/** What the preview saw of one engine that names a runbook launch directory. */
export type RunbookSighting =
  /** Not looked at: why (no pinned host key, the host did not answer, …). */
  | { readonly engineId: string; readonly run: string; readonly unseen: string }
  | {
      readonly engineId: string;
      readonly run: string;
      readonly survey: RunbookSurvey;
      /** The up's own decision, against the plan derived from the host as discovery sees it now; or why there is none. */
      readonly decision: RunbookDecision | { readonly problem: string };
      readonly sidecar: SidecarAnswer | { readonly problem: string };
    };

/** For an engine: kept (adopt), replaced, or started afresh. For evidence: adopted or measured. */
export type Verdict = "adopt" | "replace" | "start" | "measure" | "undecided";

export interface ForecastLine {
  /** `engine e1`, `profile e1` or `first-token calibration`. */
  readonly subject: string;
  readonly verdict: Verdict;
  readonly reason: string;
}

/** The condition every adoption of evidence carries, which only the `up` can check. */
const SERVES_RUNBOOK_DOCUMENT = "serves the runbook's attestation document (its contract equals the program's)";

const isSeen = (s: RunbookSighting): s is Extract<RunbookSighting, { survey: RunbookSurvey }> => "survey" in s;

/**
 * Whether the up keeps the runbook's engine: its own decision when the preview could derive the plan,
 * else what the launch directory alone says (a live checked plan is kept only if it equals the program's).
 */
function engineFate(s: Extract<RunbookSighting, { survey: RunbookSurvey }>): { verdict: Verdict; reason: string } {
  if (!("problem" in s.decision)) return { verdict: s.decision.action, reason: s.decision.reason };
  const standing = runbookStanding(s.survey);
  if (standing.kind === "absent") return { verdict: "start", reason: `${standing.reason}; the up starts the program's engine` };
  if (standing.kind === "untrusted") return { verdict: "replace", reason: `${standing.reason}; the up replaces it` };
  return {
    verdict: "undecided",
    reason: `${standing.where} runs the plan its check covered (sha256 ${standing.planSha256}); the up keeps it if that plan equals the program's, which the preview could not derive (${s.decision.problem})`,
  };
}

/** The live binding an adopted engine will have, or why there is none to compare. */
function liveBinding(s: RunbookSighting | undefined, engineId: string): { digest: string; answer: SidecarAnswer; kept: boolean } | { verdict: Verdict; reason: string } {
  if (!s) return { verdict: "measure", reason: `the program starts engine ${engineId} itself (no engines[].runbookRun): a new generation, which nothing measured before binds` };
  if (!isSeen(s)) return { verdict: "undecided", reason: `decided in the up: ${s.unseen}` };
  const fate = engineFate(s);
  if (fate.verdict === "replace" || fate.verdict === "start") return { verdict: "measure", reason: `${fate.reason}, so engine ${engineId} will be a new generation` };
  if ("problem" in s.sidecar) return { verdict: "undecided", reason: `decided in the up: the runbook's sidecar for ${engineId} did not answer (${s.sidecar.problem})` };
  return { digest: attestationBindingDigest(s.sidecar.attestationDigest, s.sidecar.launchDigest), answer: s.sidecar, kept: fate.verdict === "adopt" };
}

/** engines[].runbookRun: whether the up keeps the launcher's engine, and why. */
export function forecastRunbookEngine(s: RunbookSighting): ForecastLine {
  const subject = `engine ${s.engineId}`;
  if (!isSeen(s)) return { subject, verdict: "undecided", reason: `decided in the up: ${s.unseen}` };
  return { subject, ...engineFate(s) };
}

/** profiling.adoptStore: each engine's row judged against the binding the engine will have. */
export function forecastProfile(engineId: string, s: RunbookSighting | undefined, source: AdoptSource, storeBytes: Uint8Array, samplesBytes: Uint8Array): ForecastLine {
  const subject = `profile ${engineId}`;
  const live = liveBinding(s, engineId);
  if ("verdict" in live) return { subject, ...live };
  const judged = adoptionFor(engineId, live.digest, source, storeBytes, samplesBytes);
  if (!judged.ok) return { subject, verdict: "measure", reason: judged.reason };
  // The stack holds every profile to Narwhal's limits (components/profiles.ts), adopted rows included.
  const overLimits = adoptionLimitReason(judged.adopted.row, NARWHAL_FIT_LIMITS, source.storePath);
  if (overLimits) return { subject, verdict: "measure", reason: overLimits };
  const binds = `its row in ${source.storePath} binds ${live.digest}, as the runbook's sidecar attests now`;
  return live.kept
    ? { subject, verdict: "adopt", reason: `${binds}; adopted if the up ${SERVES_RUNBOOK_DOCUMENT}` }
    : { subject, verdict: "undecided", reason: `${binds}; adopted if the up keeps engine ${engineId} and ${SERVES_RUNBOOK_DOCUMENT}` };
}

/**
 * calibration.adopt: every engine of the stack must still be the process the file sampled, bound the
 * same way. The file's other checks (model, URLs, paths, samples, served context) need the fleet
 * document and are made in the `up`.
 */
export function forecastCalibration(path: string, bytes: Uint8Array, engineIds: ReadonlyArray<string>, sightings: ReadonlyMap<string, RunbookSighting>): ForecastLine {
  const subject = "first-token calibration";
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch (err) {
    return { subject, verdict: "measure", reason: `${path} is not JSON: ${(err as Error).message}` };
  }
  const starts = isObject(doc) && isObject(doc.process_starts) ? doc.process_starts : {};
  const generations = isObject(doc) && isObject(doc.generations) ? doc.generations : {};
  // narwhal binds a sampled engine by its attestation under an engine contract, else by its identity.
  const contract = isObject(doc) && doc.contract_fingerprint !== null && doc.contract_fingerprint !== undefined;
  const measure: string[] = [];
  const undecided: string[] = [];
  const keptIf: string[] = [];
  for (const id of engineIds) {
    const live = liveBinding(sightings.get(id), id);
    if ("verdict" in live) {
      (live.verdict === "undecided" ? undecided : measure).push(live.reason);
      continue;
    }
    const { version, processStartS } = live.answer;
    const expected = contract ? live.digest : version !== null && processStartS !== null ? identityGenerationDigest(version, processStartS) : undefined;
    if (starts[id] !== processStartS) measure.push(`${id} was sampled in the process started at ${JSON.stringify(starts[id] ?? null)}, the live process started at ${processStartS ?? "unknown"} (restarted since)`);
    else if (generations[id] !== expected) measure.push(`${id} was sampled as generation ${JSON.stringify(generations[id] ?? null)}, the live engine binds ${expected ?? "nothing readable"}`);
    else if (!live.kept) keptIf.push(id);
  }
  if (measure.length > 0) return { subject, verdict: "measure", reason: measure.join("; ") };
  if (undecided.length > 0) return { subject, verdict: "undecided", reason: undecided.join("; ") };
  const still = `every engine ${path} sampled still runs the process it sampled, bound as it was`;
  const conditions = [
    ...(keptIf.length > 0 ? [`the up keeps ${keptIf.join(", ")}`] : []),
    ...(contract ? ["the up serves the runbook's attestation documents (their contracts equal the program's)"] : []),
    "the file passes the checks the up makes against the fleet document (model, URLs, paths, samples, served context)",
  ];
  return { subject, verdict: keptIf.length > 0 ? "undecided" : "adopt", reason: `${still}; adopted if ${conditions.join(" and ")}` };
}

/** One line per subject, as the preview prints them: `adoption forecast: profile e1: adopt: …`. */
export function formatForecast(lines: ReadonlyArray<ForecastLine>): string[] {
  return lines.map((l) => `adoption forecast: ${l.subject}: ${l.verdict}: ${l.reason}`);
}
