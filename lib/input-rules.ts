/**
 * The rules the providers' input schemas share beyond one field (a field's own type and wording are in
 * lib/provider-fields.ts): rules across fields, over each item of a list, in the order refusals are
 * reported, and schemaFailures, which keeps the messages as written and lets unknown values through.
 *
 * A property whose rule lets an absent value pass must be marked `.optional()`: zod refuses a missing
 * key ("expected nonoptional") whenever its schema is not, even one that would accept `undefined`.
 */
import { z, type ZodType } from "zod";
import { hasUnknown } from "./unknown";

/** A string with something in it. */
export const isFilled = (v: unknown): v is string => typeof v === "string" && v !== "";

/** A `sha256:` digest as every record and binding writes it. */
export const isDigest = (v: unknown): v is string => typeof v === "string" && /^sha256:[0-9a-f]{64}$/.test(v);

/**
 * A value judged by a rule that returns its problems (often one the library applies elsewhere), once the
 * value is known: such a rule need not understand the placeholder a preview passes for it.
 */
export const judgedBy = (problems: (v: unknown) => string | readonly string[] | undefined) =>
  z.unknown().superRefine((v, ctx) => {
    if (hasUnknown(v)) return;
    for (const message of [problems(v) ?? []].flat()) ctx.addIssue({ code: "custom", message });
  });

/** A value's fields, read as a plain object's; anything else has none (so each field is refused as missing). */
export const fieldsOf = (v: unknown): Record<string, unknown> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** A stored login to a host pinned to the key discovery verified; a missing one is refused field by field, as an empty one is. */
export const hostLogin = () =>
  z.preprocess(
    fieldsOf,
    z.looseObject({
      host: z.unknown().refine(isFilled, { error: "login.host must be the host's address" }),
      hostKey: z.unknown().refine(isFilled, { error: "login.hostKey must be the host key discovery verified" }),
      port: z.unknown().refine(Number.isInteger, { error: "login.port must be a port number" }),
    }),
  );

/**
 * A list whose items are each judged by a schema made for that item, so a refusal can name the item by
 * its id rather than its place; anything but a list is left to the property's other rules.
 */
export const each = (schemaFor: (item: Record<string, unknown>) => ZodType) => (items: unknown, ctx: z.RefinementCtx) => {
  if (!Array.isArray(items)) return;
  for (const raw of items) {
    const item = fieldsOf(raw);
    for (const issue of schemaFor(item).safeParse(item).error?.issues ?? []) ctx.addIssue({ code: "custom", message: issue.message });
  }
};

/**
 * A rule that judges several properties together; each refusal names the property it is about. It sees
 * every value as given, unknown ones included: those it reads besides the one it names, it checks itself.
 */
export const across = (rule: (news: Record<string, unknown>, refuse: (property: string, message: string) => void) => void) =>
  z.looseObject({}).superRefine((news, ctx) => rule(news, (property, message) => ctx.addIssue({ code: "custom", path: [property], message })));

/**
 * Schemas over the same inputs, their refusals reported in this order (a rule across properties can sit
 * between two properties' own). Unlike z.intersection nothing is merged, which would throw on a value
 * not equal to itself (NaN) instead of letting its rule refuse it.
 */
export const inOrder = (...parts: ZodType[]) =>
  z.unknown().superRefine((news, ctx) => {
    for (const part of parts) for (const issue of part.safeParse(news).error?.issues ?? []) ctx.addIssue({ ...issue });
  });

/**
 * The failures of a zod schema, one per issue, with the property named; unknown values pass. zod's own
 * wording is prefixed with the path; a reason the provider wrote (one that already begins with its path,
 * or a refinement's) is kept as written, so a provider's refusals read the same whatever checks them.
 */
export function schemaFailures(schema: ZodType, news: Record<string, unknown>): Array<{ property: string; reason: string }> {
  const parsed = schema.safeParse(news);
  if (parsed.success) return [];
  return parsed.error.issues
    .filter((issue) => issue.path.length === 0 || !hasUnknown(news[String(issue.path[0])]))
    .map((issue) => {
      const where = issue.path.map(String).join(".");
      const asWritten = !where || issue.code === "custom" || issue.message.startsWith(`${where} `);
      return { property: String(issue.path[0] ?? ""), reason: asWritten ? issue.message : `${where}: ${issue.message}` };
    });
}
