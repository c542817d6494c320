import type * as pulumi from "@pulumi/pulumi";
import { canonicalJson } from "../lib/digest";

/** The engine's placeholder for a value that is not known until apply (only seen during preview). */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/** True when a value, or anything inside it, is only known after apply (preview). */
export function hasUnknown(v: unknown): boolean {
  if (v === UNKNOWN) return true;
  if (v && typeof v === "object") return Object.values(v as Record<string, unknown>).some(hasUnknown);
  return false;
}

function differs(a: unknown, b: unknown): boolean {
  if (a === UNKNOWN || b === UNKNOWN) return true;
  return canonicalJson(a ?? null) !== canonicalJson(b ?? null);
}

/**
 * The evidence rule in one place: a change to anything the measurement was taken against replaces it
 * (and `replaces` names those inputs, which `pulumi preview` shows as the reason); a change to anything
 * else updates in place. `changes` is always explicit because the engine ignores `replaces` otherwise.
 */
export function diffInputs<T extends object>(
  olds: T,
  news: T,
  measuredAgainst: ReadonlyArray<keyof T & string>,
  updatable: ReadonlyArray<keyof T & string> = [],
): pulumi.dynamic.DiffResult {
  const replaces = measuredAgainst.filter((k) => differs(olds[k], news[k]));
  const updates = updatable.filter((k) => differs(olds[k], news[k]));
  return { changes: replaces.length + updates.length > 0, replaces, deleteBeforeReplace: false };
}
