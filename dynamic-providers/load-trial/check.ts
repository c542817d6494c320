/** The trial point's inputs as a zod schema: the point itself, then the point against the profiled range. */
import { z } from "zod";
import { hasUnknown } from "../diff";
import { across, each, hostLogin, inOrder, isFilled, nonEmpty, oneOf, positiveInteger, positiveNumber, positiveSeconds, sha256Digest } from "../input-rules";
import { pointProblems } from "../../lib/trial/point";
import { pointRange } from "../../lib/trial/predict";
import type { TrialEngine } from "./types";

const engine = (e: Record<string, unknown>) => {
  const k = (field: string) => `engines[${String(e.engineId)}].${field}`;
  return z.looseObject({
    engineId: nonEmpty("engines[].engineId"),
    role: oneOf(k("role"), ["prefill", "decode"]),
    url: nonEmpty(k("url")),
    generationDigest: sha256Digest(k("generationDigest")),
    row: z.unknown().refine((r) => !!r && typeof r === "object", { error: `${k("row")} must be the engine's profile row` }),
  });
};

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

/** LoadTrialInputs, in the order their refusals are reported. */
export const loadTrialInputs = inOrder(
  z.looseObject({
    stack: nonEmpty("stack"),
    model: nonEmpty("model"),
    routerUrl: z.unknown().refine((u) => isFilled(u) && /^https?:\/\//.test(u), { error: (iss) => `routerUrl must be the router's http URL, got ${JSON.stringify(iss.input)}` }),
    engines: z
      .unknown()
      .refine((v) => Array.isArray(v) && v.length > 0, { error: "engines: expected a non-empty list" })
      .superRefine(each(engine)),
    via: hostLogin(),
    requestTimeoutS: positiveSeconds("requestTimeoutS"),
    drainTimeoutS: positiveSeconds("drainTimeoutS"),
    scrapeIntervalS: positiveSeconds("scrapeIntervalS"),
    routerPid: positiveInteger("routerPid"),
    fleetDocumentDigest: sha256Digest("fleetDocumentDigest"),
    profileStoreDigest: sha256Digest("profileStoreDigest"),
    minGoodFraction: z.unknown().refine((v) => typeof v === "number" && v > 0 && v <= 1, { error: (iss) => `minGoodFraction must be in (0, 1], got ${JSON.stringify(iss.input)}` }),
    predictionBound: positiveNumber("predictionBound"),
    routerOverheadS: z.unknown().refine((v) => typeof v === "number" && Number.isFinite(v) && v >= 0, { error: (iss) => `routerOverheadS must be a non-negative number of seconds, got ${JSON.stringify(iss.input)}` }),
    slo: z.looseObject({ ttftS: positiveSeconds("slo.ttftS"), tpotS: positiveSeconds("slo.tpotS") }),
  }),
  pointShape,
  withinProfiledRange,
);
