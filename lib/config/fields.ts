/**
 * zod field builders that word their own errors. Each field knows its rule in words ("an integer from 1
 * to 65535"), so a wrong type, a missing value and a value out of range all read the same way:
 * `found 70000; allowed: an integer from 1 to 65535`. The same words are kept as the field's `expected`
 * metadata, which docs/config.md shows as the key's type (lib/config/reference).
 */
import { z } from "zod";
import { kindOf, orList, show, typeMessage } from "./describe";

type IssueMap = (issue: z.core.$ZodRawIssue) => string | undefined;

/** zod `error` option for a schema's own type errors; other issue codes fall through to the defaults. */
export function typeError(expected: string): IssueMap {
  return (issue) => (issue.code === "invalid_type" ? typeMessage(issue.input, expected) : undefined);
}

/** A number rule. `gt` is an exclusive lower bound, `min`/`max` inclusive. */
export interface NumberRule {
  int?: boolean;
  min?: number;
  gt?: number;
  max?: number;
  /** Appended in words, e.g. "seconds". */
  unit?: string;
}

function describeNumber(rule: NumberRule): string {
  const kind = rule.int ? "an integer" : "a number";
  let words: string;
  if (rule.min !== undefined && rule.max !== undefined) words = `${kind} from ${rule.min} to ${rule.max}`;
  else if (rule.gt !== undefined && rule.max !== undefined) words = `${kind} greater than ${rule.gt} and at most ${rule.max}`;
  else if (rule.gt === 0) words = rule.int ? "a positive integer" : "a positive number";
  else if (rule.gt !== undefined) words = `${kind} greater than ${rule.gt}`;
  else if (rule.min === 0) words = rule.int ? "a non-negative integer" : "a non-negative number";
  else if (rule.min === 1 && rule.int) words = "a positive integer";
  else if (rule.min !== undefined) words = `${kind} of at least ${rule.min}`;
  else words = kind;
  return rule.unit ? `${words} (${rule.unit})` : words;
}

function fits(v: number, rule: NumberRule): boolean {
  return (
    (!rule.int || Number.isInteger(v)) &&
    (rule.min === undefined || v >= rule.min) &&
    (rule.gt === undefined || v > rule.gt) &&
    (rule.max === undefined || v <= rule.max)
  );
}

/** A number checked against one rule, with one message for every way it can be wrong. */
export function num(rule: NumberRule) {
  const allowed = describeNumber(rule);
  return z
    .number({ error: typeError(allowed) })
    .superRefine((v, ctx) => {
      if (!fits(v, rule)) ctx.addIssue({ code: "custom", message: `found ${show(v)}; allowed: ${allowed}`, input: v });
    })
    .meta({ expected: allowed });
}

export const port = () => num({ int: true, min: 1, max: 65535 });
export const seconds = () => num({ gt: 0, unit: "seconds" });
export const positiveInt = () => num({ int: true, min: 1 });

/** One of a fixed set of numbers, e.g. block sizes. */
export function numberIn(values: readonly number[]) {
  const allowed = orList(values.map(String));
  return z
    .number({ error: typeError(allowed) })
    .superRefine((v, ctx) => {
      if (!values.includes(v)) ctx.addIssue({ code: "custom", message: `found ${show(v)}; allowed: ${allowed}`, input: v });
    })
    .meta({ expected: allowed });
}

/** One of a fixed set of strings; wrong type and wrong value get the same message. */
export function choice<const T extends readonly [string, ...string[]]>(values: T) {
  const allowed = orList(values.map((v) => JSON.stringify(v)));
  return z.enum(values, { error: (issue) => `found ${show(issue.input)}; allowed: ${allowed}` }).meta({ expected: allowed });
}

export const flag = () => z.boolean({ error: typeError("true or false") }).meta({ expected: "true or false" });

/**
 * A string described by `expected` and checked by `problem` (which returns the full message, or
 * undefined when the string is fine).
 */
export function text(expected: string, problem?: (s: string) => string | undefined) {
  return z
    .string({ error: typeError(expected) })
    .superRefine((s, ctx) => {
      const message = s === "" ? `found ""; expected ${expected}` : problem?.(s);
      if (message) ctx.addIssue({ code: "custom", message, input: s });
    })
    .meta({ expected });
}

/** A string that must match `pattern`, described in words by `rule`. */
export function matching(pattern: RegExp, rule: string) {
  return text(rule, (s) => (pattern.test(s) ? undefined : `found ${show(s)}; allowed: ${rule}`));
}

/** A list with an optional minimum length and, with `unique`, no value twice. */
export function list<T extends z.ZodType>(
  element: T,
  expected: string,
  opts: { min?: number; unique?: boolean; tooShort?: (n: number) => string } = {},
) {
  const checked = z.array(element, { error: typeError(expected) }).superRefine((items, ctx) => {
    if (opts.min !== undefined && items.length < opts.min) {
      const found = items.length === 0 ? "an empty list" : `${items.length} item${items.length === 1 ? "" : "s"}`;
      ctx.addIssue({
        code: "custom",
        message: opts.tooShort?.(items.length) ?? `found ${found}; expected ${expected} with at least ${opts.min}`,
        input: items,
      });
    }
    if (opts.unique) {
      items.forEach((item, i) => {
        if (items.indexOf(item) !== i) {
          ctx.addIssue({ code: "custom", path: [i], message: `${show(item)} is listed twice; list each value once`, input: item });
        }
      });
    }
  });
  return checked.meta({ expected });
}

/** `Record<string, string>` whose keys match `keyPattern`. */
export function stringMap(keyPattern: RegExp, keyRule: string, expected: string) {
  const key = z.string().superRefine((k, ctx) => {
    if (!keyPattern.test(k)) ctx.addIssue({ code: "custom", message: `the key ${show(k)} is not ${keyRule}`, input: k });
  });
  // Values are not echoed in messages: an environment value may be something private.
  const value = z.string({ error: (issue) => `found ${kindOf(issue.input)}; expected a string value (quote numbers and booleans)` });
  return z.record(key, value, { error: typeError(expected) }).meta({ expected });
}

/** A strict object: unknown keys are errors (reported per key, with the closest known key). */
export function strict<S extends z.ZodRawShape>(shape: S, expected: string) {
  return z.strictObject(shape, { error: typeError(expected) });
}
