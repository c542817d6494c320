/** Preflight's inputs as a zod schema: the fleet document, engines, pair selection and repeats. */
import { z } from "zod";
import { hasUnknown } from "../diff";
import { across, each, inOrder, oneOf, sha256Digest } from "../input-rules";
import { documentEngines } from "../../lib/preflight";

/** One engine's bindings, its refusals named by its id. */
const engine = (e: Record<string, unknown>) => {
  const k = (field: string) => `engines[${String(e.engineId)}].${field}`;
  return z.looseObject({
    generationDigest: sha256Digest(k("generationDigest")),
    attestationDigest: sha256Digest(k("attestationDigest")),
    profileDigest: sha256Digest(k("profileDigest")),
  });
};

/** The document's engines, each given its generation, attestation and profile. */
const againstDocument = across((news, refuse) => {
  if (hasUnknown(news.fleetDocument)) return;
  try {
    const ids = documentEngines(news.fleetDocument as Record<string, unknown>).map((e) => e.iid);
    if (Array.isArray(news.engines)) {
      const given = (news.engines as Array<{ engineId: string }>).map((e) => e.engineId);
      const missing = ids.filter((id) => !given.includes(id));
      if (missing.length) refuse("engines", `engines: no generation, attestation and profile given for ${missing.join(", ")}`);
    }
  } catch (err) {
    refuse("fleetDocument", (err as Error).message);
  }
});

/** PreflightInputs, in the order their refusals are reported. */
export const preflightInputs = inOrder(
  againstDocument,
  z.looseObject({
    engines: z.unknown().superRefine(each(engine)).optional(),
    pairs: oneOf("pairs", ["mesh", "ring"]),
    schedule: oneOf("schedule", ["concurrent", "sequential"]),
    strict: z.unknown().refine((s) => typeof s === "boolean", { error: (iss) => `strict must be true or false, got ${JSON.stringify(iss.input)}` }).optional(),
    repeats: z.unknown().refine((r) => Number.isInteger(r) && (r as number) >= 1 && (r as number) <= 100, { error: (iss) => `repeats must be an integer from 1 to 100, got ${JSON.stringify(iss.input)}` }),
  }),
);
