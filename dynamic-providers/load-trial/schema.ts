/** The trial point's inputs as one zod schema (the point itself, then the point against the profiled range), their type, and the outputs. */
import { z } from "zod";
import { pointProblems } from "../../lib/trial/point";
import { pointRange } from "../../lib/trial/predict";
import type { ClockAnchor, Departure, Prediction, ProfiledRange, Reconciliation, TrialPoint, TrialSummary, TrialVerdict } from "../../lib/trial/types";
import type { ProfileRow } from "../../lib/profiling/store";
import type { StoredLogin } from "../../lib/ssh/stored-login";
import type { DisturbedTry } from "../../lib/trial/tries";
import { aboveZero, atLeast, digest, given, got, matching, oneOf, positiveWhole, seconds, text, typedAs } from "../../lib/provider-fields";
import { hasUnknown } from "../../lib/unknown";
import { across, each, hostLogin, inOrder } from "../../lib/input-rules";

/** One engine as the trial sees it: the generation it must still be, its role and where the router host reaches it. */
const engine = (id: unknown) => {
  const k = (field: string) => `engines[${String(id)}].${field}`;
  return z.object({
    engineId: text("engines[].engineId"),
    role: oneOf(k("role"), ["prefill", "decode"]),
    url: text(k("url")),
    generationDigest: digest(k("generationDigest")),
    /** The profile row the router prices this engine with (Gate F). */
    row: z.custom<ProfileRow>().refine((r) => !!r && typeof r === "object", { error: `${k("row")} must be the engine's profile row` }),
    hostAlias: given<string>(),
  });
};
export type TrialEngine = z.infer<ReturnType<typeof engine>>;

/** The point's own shape: rate, count, arrival and mix (lib/trial/point.ts names each field). */
const pointShape = across((news, refuse) => {
  if (hasUnknown(news.point)) return;
  for (const p of pointProblems(news.point)) refuse("point", p);
});

/** Within the range the stored profiles cover, once the rows are known (the first preview cannot know them). */
const withinProfiledRange = across((news, refuse) => {
  if (hasUnknown(news.point) || hasUnknown(news.engines) || !Array.isArray(news.engines)) return;
  if (pointProblems(news.point).length) return;
  const engines = news.engines as TrialEngine[];
  if (!engines.some((e) => e.role === "prefill") || !engines.some((e) => e.role === "decode")) {
    refuse("engines", "engines: a trial needs at least one prefill and one decode engine");
    return;
  }
  const point = news.point as Parameters<typeof pointRange>[1];
  for (const p of pointRange(engines.map((e) => ({ role: e.role, row: e.row })), point).problems) refuse("point", p);
});

/** The share of requests that must be good: above none, at most all. */
const inUnit = got("minGoodFraction", "must be in (0, 1]");

const fields = z.object({
  stack: text("stack"),
  model: text("model"),
  /** The router's private URL, reached only through an SSH local forward from the router host. */
  routerUrl: matching(/^https?:\/\//, got("routerUrl", "must be the router's http URL")),
  engines: z
    .custom<TrialEngine[]>()
    .refine((v) => Array.isArray(v) && v.length > 0, { error: "engines: expected a non-empty list" })
    .superRefine(each((e) => engine(e.engineId))),
  via: typedAs<StoredLogin>(hostLogin()),
  requestTimeoutS: seconds("requestTimeoutS"),
  drainTimeoutS: seconds("drainTimeoutS"),
  scrapeIntervalS: seconds("scrapeIntervalS"),
  /** The serving router process: a restarted router serves another trial. */
  routerPid: positiveWhole("routerPid"),
  /** The port routerPid listens on, behind the router's front (`router.backendPort`); absent: routerUrl's own port. */
  routerBackendPort: positiveWhole("routerBackendPort").optional(),
  /** The fleet document the router serves (its SLO, deadlines and engines). */
  fleetDocumentDigest: digest("fleetDocumentDigest"),
  /** The profile store the router loaded: a new profile re-runs every point. */
  profileStoreDigest: digest("profileStoreDigest"),
  minGoodFraction: z.number({ error: inUnit }).gt(0, { error: inUnit }).max(1, { error: inUnit }),
  predictionBound: aboveZero(got("predictionBound", "must be a positive number")),
  /** The router's overhead added to the predicted first token (`calibration.routerOverheadS`). */
  routerOverheadS: atLeast(0, got("routerOverheadS", "must be a non-negative number of seconds")),
  slo: z.object({ ttftS: seconds("slo.ttftS"), tpotS: seconds("slo.tpotS") }),
  point: given<TrialPoint>(),
  routerStartedAt: given<string>(),
  /** `host:port` of the stack's Prometheus as the router host reaches it; absent without observability. */
  prometheus: given<string>().optional(),
  routerHost: given<string>(),
  viaPrivateKey: given<string>().optional(),
  viaPassword: given<string>().optional(),
  /** Every host of the fleet, whose socket summary is kept before and after the point; credentials by host alias. */
  hosts: given<Array<{ alias: string; login: StoredLogin }>>(),
  hostPrivateKeys: given<Record<string, string>>().optional(),
  hostPasswords: given<Record<string, string>>().optional(),
});

export type LoadTrialInputs = z.infer<typeof fields>;

/** LoadTrialInputs, in the order their refusals are reported. */
export const loadTrialInputs = inOrder(fields, pointShape, withinProfiledRange);

export interface LoadTrialOutputs extends LoadTrialInputs {
  verdict: TrialVerdict;
  reasons: string[];
  summary: TrialSummary;
  prediction: Prediction;
  departure: Departure;
  range: ProfiledRange;
  reconciliation: Reconciliation;
  window: { start: ClockAnchor; end: ClockAnchor };
  evidence: { relativePath: string; digest: string };
  /** Tries before this one that only the client machine disturbed, each with its record (lib/trial/tries.ts); absent in older states. */
  disturbedTries?: DisturbedTry[];
  ranAt: string;
  wallSeconds: number;
}
