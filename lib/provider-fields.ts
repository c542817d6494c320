/**
 * Typed zod fields that refuse in a provider's own words: one message however the value is wrong (its
 * type, its absence, its range), so the schema's type says what the field holds and the refusal still
 * reads as the provider has always written it (tests and operators match on that wording).
 */
import { z } from "zod";
import { isStackFolderName } from "./stack-name";

/** A refusal as written, or written from the value given. */
export type Words = string | ((issue: { input?: unknown }) => string);

/** `<k> <rule>, got <value>`: the wording of the shared input rules. */
export const got = (k: string, rule: string): Words => (issue) => `${k} ${rule}, got ${JSON.stringify(issue.input)}`;

/** A string with something in it. */
export const filled = (error?: Words) => z.string({ error }).min(1, { error });

/** A whole number from `lo` to `hi`. */
export const whole = (lo: number, hi: number, error?: Words) => z.number({ error }).int({ error }).min(lo, { error, abort: true }).max(hi, { error });

/** A finite number above zero. */
export const aboveZero = (error?: Words) => z.number({ error }).positive({ error });

/** A number of at least `min`. */
export const atLeast = (min: number, error?: Words) => z.number({ error }).min(min, { error });

/** A string matching `pattern`, refused in the same words whether it is no string or the wrong one. */
export const matching = (pattern: RegExp, error?: Words) => z.string({ error }).regex(pattern, { error });

/** A TCP port. */
export const tcpPort = (k: string) => whole(1, 65535, got(k, "must be a port from 1 to 65535"));

/** A bound in seconds. */
export const seconds = (k: string) => aboveZero(got(k, "must be a positive number of seconds"));

/** A whole number above zero. */
export const positiveWhole = (k: string) => whole(1, Number.MAX_SAFE_INTEGER, got(k, "must be a positive integer"));

/** An absolute path on a host. */
export const absolutePath = (k: string) => z.string({ error: got(k, "must be an absolute path") }).startsWith("/", { error: got(k, "must be an absolute path") });

/** A non-empty string, refused as "<k> must be a non-empty string". */
export const text = (k: string) => filled(`${k} must be a non-empty string`);

/** A stack name as it names folders here and on the hosts. */
export const stackName = () => {
  const error = got("stack", 'must be a stack name that can name a folder (letters, digits, "_", "." or "-")');
  return z.string({ error }).refine(isStackFolderName, { error });
};

/** A service's http(s) base URL (an optional path allowed), refused naming whose it is. */
export const httpBaseUrl = (k: string, whose: string) => {
  const error = got(k, `must be ${whose} http(s) base URL`);
  return z.string({ error }).regex(/^https?:\/\/[^/\s]+(\/\S*)?$/, { error });
};

/** One of a few words, refused as `<k> must be "a" or "b", got <value>`. */
export const oneOf = <const W extends readonly [string, ...string[]]>(k: string, words: W) => z.enum(words, { error: got(k, `must be ${words.map((w) => JSON.stringify(w)).join(" or ")}`) });

/** A `sha256:` digest as every record and binding writes it. */
export const digest = (k: string) => z.string({ error: got(k, "must be sha256:<64 hex>") }).regex(/^sha256:[0-9a-f]{64}$/, { error: got(k, "must be sha256:<64 hex>") });

/**
 * A value the schema types and does not judge: the program builds it from checked config (or a lib
 * function judges it where it is read), as a hand-written interface typed it before. Absent passes.
 */
export const given = <T>() => z.any().optional() as unknown as z.ZodType<T>;

/** A schema whose rule is a shared untyped one (input-rules' judgedBy, hostLogin), given the type it proves. */
export const typedAs = <T>(schema: z.ZodType) => schema.transform((v) => v as T);
