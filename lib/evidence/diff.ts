import { canonicalJson } from "../digest";
import { hasUnknown, UNKNOWN } from "../unknown";

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
): { changes: boolean; replaces: string[]; deleteBeforeReplace: false } {
  const replaces = measuredAgainst.filter((k) => differs(olds[k], news[k]));
  const updates = updatable.filter((k) => differs(olds[k], news[k]));
  return { changes: replaces.length + updates.length > 0, replaces, deleteBeforeReplace: false };
}

/**
 * `news` with the values a remote command printed (`printed`) taken from `olds` while a preview cannot know
 * them and the command is not replaced: its `startKey` input (components/runtime/start-key.ts) is known
 * and the one the old values were printed under. Such a command only runs its start again, which adopts
 * the process it started and prints the same identity, so announcing a change would forecast a
 * re-measurement that `up` never makes; `up` diffs again with what the command printed.
 */
export function heldWhileStartStands<T extends object>(olds: T, news: T, printed: ReadonlyArray<keyof T & string>, startKey: keyof T & string): T {
  const key = news[startKey];
  if (typeof key !== "string" || key === UNKNOWN || key !== olds[startKey]) return news;
  const held = { ...news };
  for (const k of printed) if (hasUnknown(news[k])) held[k] = olds[k];
  return held;
}
