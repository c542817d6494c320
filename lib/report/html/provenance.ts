/** The "when and from which record" line under each section of the report. */
import { esc } from "./escape";
import type { Chosen } from "./select";
import type { Provenance } from "./types";

/** Where a chosen record came from, for the line under its section. */
export function provenance(c: Chosen): Provenance {
  const r = c.stored.record;
  return { relativePath: c.stored.relativePath, digest: c.stored.digest, startedAt: r.startedAt, endedAt: r.endedAt, status: r.verdict.status, reasons: r.verdict.reasons, chosenBy: c.chosenBy };
}

/** `2026-01-31T12:00:00.000Z` → `2026-01-31 12:00:00Z`: one clock (UTC), easy to read. */
export const when = (iso: string): string => iso.replace("T", " ").replace(/\.\d+Z$/, "Z");

export const shortDigest = (digest: string | null | undefined): string => (digest ? `${digest.slice(0, 19)}…` : "—");

export function provenanceLine(p: Provenance): string {
  const chosen = p.chosenBy === "stack" ? "held by the stack" : "newest in the store";
  const reasons = p.reasons.length ? `: ${p.reasons.join("; ")}` : "";
  return (
    `<p class="provenance">measured <time datetime="${esc(p.startedAt)}">${esc(when(p.startedAt))}</time> – <time datetime="${esc(p.endedAt)}">${esc(when(p.endedAt))}</time>, ` +
    `verdict <span class="status status-${esc(p.status)}">${esc(p.status)}</span>${esc(reasons)}; record <code title="${esc(p.digest)}">${esc(p.relativePath)}</code> (${esc(chosen)})</p>`
  );
}
