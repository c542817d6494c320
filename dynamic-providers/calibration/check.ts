/** Calibration's inputs as a zod schema: engines, lengths, sample counts and the observation bound against the fleet document. */
import { z } from "zod";
import { documentEngines, MIN_SAMPLES_PER_GROUP, observationBoundProblem, timeoutsOf } from "../../lib/preflight";
import { hasUnknown } from "../diff";
import { across, each, inOrder, integerAtLeast, isDigest, oneOf, positiveInteger, sha256Digest } from "../input-rules";

/** The engines, once known: the rules that read them beside another property need every one. */
const knownEngines = (v: unknown) => (Array.isArray(v) && !hasUnknown(v) ? (v as Array<Record<string, unknown>>) : undefined);

/** One engine, its refusals named by its id. */
const engine = (e: Record<string, unknown>) => {
  const k = (field: string) => `engines[${String(e.engineId)}].${field}`;
  return z.looseObject({
    generationDigest: sha256Digest(k("generationDigest")),
    attestationDigest: sha256Digest(k("attestationDigest")),
    role: oneOf(k("role"), ["prefill", "decode"]),
    maxModelLen: integerAtLeast(k("maxModelLen"), 2),
  });
};

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

const adoptSource = z
  .unknown()
  .refine(
    (a) => {
      const s = a as Record<string, unknown> | null;
      return !!s && typeof s.path === "string" && s.path.startsWith("/") && isDigest(s.sha256) && (s.pinned === undefined || isDigest(s.pinned));
    },
    { error: "adopt must name the calibration to adopt as {path, sha256, pinned?}: an absolute path and sha256:<64 hex> digests of the bytes read and pinned" },
  )
  .optional();

/** CalibrationInputs, in the order their refusals are reported. */
export const calibrationInputs = inOrder(
  z.looseObject({
    engines: z
      .unknown()
      .refine((v) => Array.isArray(v) && v.length > 0, { error: "engines: expected a non-empty list" })
      .superRefine(each(engine)),
  }),
  againstDocument,
  z.looseObject({ inputLengths: z.unknown().refine(isLengthList, { error: (iss) => `inputLengths must be a non-empty list of positive integers, got ${JSON.stringify(iss.input)}` }) }),
  withinServedContext,
  z.looseObject({
    samplesPerGroup: integerAtLeast("samplesPerGroup", MIN_SAMPLES_PER_GROUP),
    maxFailuresPerGroup: positiveInteger("maxFailuresPerGroup"),
    routerOverheadS: z.unknown().refine((s) => typeof s === "number" && Number.isFinite(s) && s >= 0, { error: (iss) => `routerOverheadS must be a non-negative number of seconds, got ${JSON.stringify(iss.input)}` }),
    schedule: oneOf("schedule", ["concurrent", "sequential"]),
    adopt: adoptSource,
  }),
);
