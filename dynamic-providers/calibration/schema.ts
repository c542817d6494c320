/** Calibration's inputs as one zod schema (engines, lengths, sample counts and the observation bound against the fleet document), their type, and the outputs. */
import { z } from "zod";
import { documentEngines, timeoutsOf } from "../../lib/preflight/document-plan";
import { MIN_SAMPLES_PER_GROUP, observationBoundProblem } from "../../lib/preflight/calibration";
import type { CalibrationAdoptionOutcome, EngineIdentity } from "../../lib/preflight/calibration-outcome";
import type { CalibrationAdoptSource } from "../../lib/preflight/calibration-adopt";
import type { GroupResult } from "../../lib/preflight/calibration";
import type { Pair } from "../../lib/preflight/pairs";
import type { Reservation } from "../../lib/engine/reservation";
import type { StoredLogin } from "../../lib/ssh/stored-login";
import { atLeast, digest, given, got, oneOf, positiveWhole, whole } from "../../lib/provider-fields";
import { hasUnknown } from "../../lib/unknown";
import { across, each, inOrder, isDigest } from "../../lib/input-rules";

/** The engines, once known: the rules that read them beside another property need every one. */
const knownEngines = (v: unknown) => (Array.isArray(v) && !hasUnknown(v) ? (v as Array<Record<string, unknown>>) : undefined);

/** One engine as calibration measures it: its role, served context, transport and the generation it must be; refusals named by its id. */
const engine = (id: unknown) => {
  const k = (field: string) => `engines[${String(id)}].${field}`;
  return z.object({
    engineId: given<string>(),
    generationDigest: digest(k("generationDigest")),
    attestationDigest: digest(k("attestationDigest")),
    role: oneOf(k("role"), ["prefill", "decode"]),
    /** The served context (`--max-model-len`) of this engine's launch plan. */
    maxModelLen: whole(2, Number.MAX_SAFE_INTEGER, got(k("maxModelLen"), `must be an integer of at least ${2}`)),
    pin: given<boolean>(),
    launchDigest: given<string>().optional(),
    /** KV transport (`tcp` or `ucx_rdma`). */
    transport: given<string>(),
  });
};
export type CalibrationEngine = z.infer<ReturnType<typeof engine>>;

/** The engines the document names, its model, its deadlines and its client TTFT. */
const againstDocument = across((news, refuse) => {
  if (hasUnknown(news.fleetDocument)) return;
  const engines = knownEngines(news.engines);
  try {
    const doc = news.fleetDocument as Record<string, unknown>;
    const given = (engines ?? []).map((e) => String(e.engineId));
    const missing = documentEngines(doc).map((e) => e.iid).filter((id) => !given.includes(id));
    if (engines && missing.length) refuse("engines", `engines: no generation, role and context given for ${missing.join(", ")}`);
    if (doc.model !== news.model) refuse("model", `model ${JSON.stringify(news.model)} is not the fleet document's ${JSON.stringify(doc.model)}`);
    const t = timeoutsOf(doc);
    const bound = observationBoundProblem(news.observationBoundS as number, t.firstTokenS, t.requestS);
    if (bound) refuse("observationBoundS", bound);
    const ttft = (doc.slo as Record<string, unknown> | undefined)?.ttft_s;
    if (!(typeof ttft === "number" && Number.isFinite(ttft))) refuse("fleetDocument", "fleetDocument.slo.ttft_s: the client TTFT requirement the deadline must fit is missing");
  } catch (err) {
    refuse("fleetDocument", (err as Error).message);
  }
});

const isLengthList = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((n) => Number.isInteger(n) && n >= 1);

/** Every length leaves room for one output token in the smallest served context. */
const withinServedContext = across((news, refuse) => {
  const engines = knownEngines(news.engines);
  const lens = news.inputLengths;
  if (!isLengthList(lens) || !engines?.every((e) => Number.isInteger(e.maxModelLen))) return;
  const context = Math.min(...engines.map((e) => e.maxModelLen as number));
  const over = lens.filter((n) => n + 1 > context);
  if (over.length) refuse("inputLengths", `inputLengths [${over.join(", ")}] leave no output token within the served context ${context}; the longest admitted input is ${context - 1}`);
});

// Refinements where the refusal words a whole list or object, not one of its items.
const engines = z.object({
  engines: z
    .custom<CalibrationEngine[]>()
    .refine((v) => Array.isArray(v) && v.length > 0, { error: "engines: expected a non-empty list" })
    .superRefine(each((e) => engine(e.engineId))),
});
const lengths = z.object({
  inputLengths: z.custom<number[]>().refine(isLengthList, { error: got("inputLengths", "must be a non-empty list of positive integers") }),
});
const adoptSource = (a: unknown) => {
  const s = a as Record<string, unknown> | null;
  return !!s && typeof s.path === "string" && s.path.startsWith("/") && isDigest(s.sha256) && (s.pinned === undefined || isDigest(s.pinned));
};
const rest = z.object({
  samplesPerGroup: whole(MIN_SAMPLES_PER_GROUP, Number.MAX_SAFE_INTEGER, got("samplesPerGroup", `must be an integer of at least ${MIN_SAMPLES_PER_GROUP}`)),
  maxFailuresPerGroup: positiveWhole("maxFailuresPerGroup"),
  routerOverheadS: atLeast(0, got("routerOverheadS", "must be a non-negative number of seconds")),
  schedule: oneOf("schedule", ["concurrent", "sequential"]),
  /**
   * A calibration measured before this stack (`calibration.adopt`) with the digest the program read:
   * create adopts it instead of sampling while every process it sampled still serves.
   */
  adopt: z
    .custom<CalibrationAdoptSource>()
    .refine(adoptSource, { error: "adopt must name the calibration to adopt as {path, sha256, pinned?}: an absolute path and sha256:<64 hex> digests of the bytes read and pinned" })
    .optional(),
  stack: given<string>(),
  /** The fleet document the router loads: engine URLs, deadlines and the client TTFT (`slo.ttft_s`). */
  fleetDocument: given<Record<string, unknown>>(),
  model: given<string>(),
  /** How engines run: kind and image (the engine generation binds the rest). */
  runtime: given<{ kind: string; image?: string }>(),
  /** The diagnostic first-token observation bound, seconds (judged against the document's deadlines above). */
  observationBoundS: given<number>(),
  apiKey: given<string>(),
  /** Probes run from the router host's network position when set. */
  via: given<StoredLogin>().optional(),
  viaPrivateKey: given<string>().optional(),
  viaPassword: given<string>().optional(),
});

export type CalibrationInputs = z.infer<typeof engines> & z.infer<typeof lengths> & z.infer<typeof rest>;

/** CalibrationInputs, in the order their refusals are reported. */
export const calibrationInputs = inOrder(engines, againstDocument, lengths, withinServedContext, rest);

/** How create came by the deadline: adopted from an earlier calibration, or measured (and, with `adopt` set, why). */
export type CalibrationAdoption = CalibrationAdoptionOutcome;

export interface CalibrationOutputs extends CalibrationInputs {
  fleetDocumentDigest: string;
  /** Every role-permitted directed path sampled. */
  paths: Pair[];
  groups: GroupResult[];
  /** The largest group result; the deadline sits above it. */
  floorS: number;
  /** The proposed engine.first_token_timeout_s. */
  deadlineS: number;
  /** The deadline the fleet document carries now. */
  currentDeadlineS: number;
  /** The observation bound the samples were taken under. */
  sampledUnderBoundS: number;
  /** The largest measured prefill. */
  prefillS: number;
  /** deadline + prefill + router overhead, against the client's requirement `slo.ttft_s`. */
  clientTtftS: number;
  clientTtftRequirementS: number;
  fitsClientTtft: boolean;
  samples: number;
  failedAttempts: number;
  /** Each engine's served context and live process identity, the same before and after the samples. */
  identities: EngineIdentity[];
  evidence?: { relativePath: string; digest: string };
  /** Set when `adopt` was given: whether the calibration was adopted or measured, and why. */
  adoption?: CalibrationAdoption;
  /**
   * Whether the engines served nothing but the samples while they were taken, from their own counters
   * (lib/engine/reservation.ts); absent when nothing was sampled (an adopted calibration).
   */
  reservation?: Reservation;
  ranAt: string;
  wallSeconds: number;
}
