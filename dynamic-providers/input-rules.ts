/**
 * The pieces the providers' input schemas share. Each refuses in the provider's own words, naming the
 * property, so a refusal reads the same whichever provider checks it (see schemaFailures in
 * evidence-provider.ts, which keeps these messages as written and lets unknown values through).
 */
import { z } from "zod";

/** A `sha256:` digest as every record and binding writes it. */
export const isDigest = (v: unknown): v is string => typeof v === "string" && /^sha256:[0-9a-f]{64}$/.test(v);

/**
 * A string input that must not be empty, refused as "<k> must be a non-empty string". A refinement, not
 * z.string(): a refused type would keep a schema's rules across properties from running.
 */
export const nonEmpty = (k: string) => z.unknown().refine((v) => typeof v === "string" && v !== "", { error: `${k} must be a non-empty string` });

/** A bound in seconds: a finite number above zero. */
export const positiveSeconds = (k: string) =>
  z.unknown().refine((t) => typeof t === "number" && Number.isFinite(t) && t > 0, { error: (iss) => `${k} must be a positive number of seconds, got ${JSON.stringify(iss.input)}` });

/** A finite number above zero (a process start, as /metrics gives it). */
export const positiveNumber = (k: string) =>
  z.unknown().refine((t) => typeof t === "number" && Number.isFinite(t) && t > 0, { error: (iss) => `${k} must be a positive number, got ${JSON.stringify(iss.input)}` });

export const sha256Digest = (k: string) => z.unknown().refine(isDigest, { error: (iss) => `${k} must be sha256:<64 hex>, got ${JSON.stringify(iss.input)}` });
