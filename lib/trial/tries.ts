/**
 * A point the client machine disturbed is run again. When the only causes a point cannot be reconciled
 * for are the client's own (its event loop stalled, its schedule slipped) and every server count agrees,
 * the fleet was measured fine but the offered load was not the one asked for: the machine running the
 * client was busy. Such a point runs again, after the same drain, at most {@link CLIENT_TRIES} times in
 * all; every try keeps its own record, and the last try's verdict stands. A point unreconciled for any
 * other cause (a counter reset, a failed scrape, counts that disagree) is the fleet's and is never re-run.
 */
import type { EvidenceRef } from "../evidence/provider-evidence";
import { CLIENT_CAUSES } from "./reconcile";
import type { Reconciliation } from "./types";

/** Tries of one point, in all, while only the client machine disturbs it. */
export const CLIENT_TRIES = 3;

/** Whether the client machine alone kept the point from reconciling: every cause is the client's and every count agrees. */
export function disturbedClientOnly(r: Reconciliation): boolean {
  return r.status === "unreconciled" && r.causes.length > 0 && r.causes.every((c) => CLIENT_CAUSES.some((k) => c.startsWith(`${k}: `))) && r.checks.every((c) => c.ok);
}

/** A try the client machine disturbed, as the outputs name it: its record and why it was run again. */
export interface DisturbedTry {
  evidence: EvidenceRef;
  reasons: string[];
}

/** One try that ran: its observations' reconciliation, and its record. */
export interface TryResult {
  observations: { reconciliation: Reconciliation };
  evidence: EvidenceRef;
}

/**
 * Runs `once`, handing it the disturbed tries before it, until a try is not disturbed by the client
 * machine alone or {@link CLIENT_TRIES} have run; a try that throws ends it at once. Returns the last
 * try and the ones before it.
 */
export async function untilUndisturbed<T extends TryResult>(once: (before: readonly DisturbedTry[]) => Promise<T>, log: (line: string) => void = () => undefined, tries = CLIENT_TRIES): Promise<{ last: T; disturbed: DisturbedTry[] }> {
  const disturbed: DisturbedTry[] = [];
  for (;;) {
    const result = await once([...disturbed]);
    const { reconciliation } = result.observations;
    if (disturbed.length + 1 >= tries || !disturbedClientOnly(reconciliation)) return { last: result, disturbed };
    disturbed.push({ evidence: result.evidence, reasons: reconciliation.causes });
    log(`try ${disturbed.length} of ${tries}: the client machine disturbed it (${reconciliation.causes.join("; ")}); its record is ${result.evidence.relativePath}; running the point again`);
  }
}

/** The last try's reasons, saying how many tries the client machine disturbed before it, when any. */
export function reasonsAfterTries(reasons: string[], disturbed: readonly DisturbedTry[], lastDisturbed: boolean): string[] {
  if (!disturbed.length) return reasons;
  const n = disturbed.length;
  const before = `the client machine disturbed ${n === 1 ? "the try" : `the ${n} tries`} before this one (${disturbed.map((d) => d.evidence.relativePath).join(", ")})`;
  return lastDisturbed ? [...reasons, `${before} and this one too: all ${n + 1} tries were disturbed; run the point again on a quieter client machine`] : [...reasons, before];
}
