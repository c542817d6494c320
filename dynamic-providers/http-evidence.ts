/**
 * A measurement's HTTP requests as its record's commands, and the engine answers it was judged on as the
 * record's artifacts (the runbook's raw captures). The answers go through the evidence store, which
 * refuses any secret registered with it: an answer echoing the API key is never written.
 */
import { HttpJournal, withHttpJournal } from "../lib/evidence/http-journal";
import type { EvidenceArtifact } from "../lib/evidence/record";
import type { ProviderEvidence } from "../lib/evidence/provider-evidence";

/** The paths of Gate C's proof and capture whose GET answers are evidence: kept whole, the last of each. */
export const GATE_C_CAPTURES: ReadonlySet<string> = new Set(["/health", "/version", "/v1/models", "/metrics"]);

/** Runs `fn` noting its requests; the journal says what was sent after, whether `fn` resolved or threw. */
export async function journalled<T>(targets: Readonly<Record<string, string>>, fn: () => Promise<T>, capture?: ReadonlySet<string>): Promise<{ value: T; journal: HttpJournal }> {
  const journal = new HttpJournal(targets, capture);
  return { value: await withHttpJournal(journal, fn), journal };
}

/** The kept answers, each an artifact named by its request and status (`GET /metrics -> 200`). */
export async function captureArtifacts(store: ProviderEvidence, kind: string, journal: HttpJournal): Promise<EvidenceArtifact[]> {
  const out: EvidenceArtifact[] = [];
  for (const c of journal.captures()) out.push(await store.artifact(kind, `${c.target}: GET ${c.path} -> ${c.status}`, c.body));
  return out;
}
