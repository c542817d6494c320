/**
 * Typed zod pieces for dynamic providers' inputs, refusing in the words of dynamic-providers/input-rules.ts
 * (`<k> must be …, got <value>`): the provider's input type is inferred from the same schema that refuses.
 * A schema-wide `error` words a wrong type and every failed check alike, so one message covers both.
 */
import { z } from "zod";

/** zod's `error` option: the words, then the value given. */
export const says = (words: string) => ({ error: (iss: { input?: unknown }) => `${words}, got ${JSON.stringify(iss.input)}` });

export const filled = (k: string) => z.string({ error: `${k} must be a non-empty string` }).min(1);
export const digest = (k: string) => z.string(says(`${k} must be sha256:<64 hex>`)).regex(/^sha256:[0-9a-f]{64}$/);
export const seconds = (k: string) => z.number(says(`${k} must be a positive number of seconds`)).positive();
export const positive = (k: string) => z.number(says(`${k} must be a positive number`)).positive();
export const wholeFrom = (k: string, min: number) => z.number(says(`${k} must be an integer of at least ${min}`)).int().min(min);
export const wholePositive = (k: string) => z.number(says(`${k} must be a positive integer`)).int().positive();

/** One of a few words, refused as `<k> must be "a" or "b", got <value>`. */
export const word = <const W extends readonly [string, ...string[]]>(k: string, words: W) => z.enum(words, says(`${k} must be ${words.map((w) => JSON.stringify(w)).join(" or ")}`));

/**
 * A value the schema types and does not judge: the program builds it from checked config (or a lib
 * function judges it where it is read), as a hand-written interface typed it before. Absent passes.
 */
export const given = <T>() => z.any().optional() as unknown as z.ZodType<T>;

/** A schema whose rule is untyped (a shared refinement), given the type it proves. */
export const typedAs = <T>(schema: z.ZodType) => schema.transform((v) => v as T);
