import type { EvidenceRef, InvalidatedEvidence, InvalidationSummary } from "./summary";
import { GATE_ORDER, GATE_TITLES } from "./kinds";

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

function line(e: EvidenceRef): string {
  return `${e.kind.padEnd(19)} ${e.subject.padEnd(14)} ${e.name}`;
}

function entry(e: InvalidatedEvidence): string[] {
  const out = [`    ${line(e)}`];
  for (const c of e.changes) out.push(`        ${c.input}: ${c.old} → ${c.new}${c.observed ? ` (refresh: ${c.observed})` : ""}`);
  if (e.changes.length === 0 && e.keys.length === 0 && (e.op === "replace" || e.op === "update")) out.push("        (no input named)");
  return out;
}

/** The report as an operator reads it: re-measured, re-judged, then what is kept, each grouped by gate. */
export function formatSummary(s: InvalidationSummary): string {
  const { counts } = s;
  if (s.nothingInvalidated) return `Stack ${s.stack}: nothing invalidated; all ${plural(counts.kept, "piece")} of evidence kept.\n`;
  const out = [
    `Stack ${s.stack}: ${counts.replaced} re-measured (replaced), ${counts.updated} re-judged (updated)` +
      (counts.created ? `, ${counts.created} new` : "") +
      (counts.deleted ? `, ${counts.deleted} removed` : "") +
      `, ${counts.kept} kept.`,
  ];
  const { serving } = s;
  if (serving.out.length) {
    out.push("", "Serving during the up (the router holds an engine out from its stop until it is swapped onto the new profiles):");
    out.push(`  out until the swap: ${serving.out.map((o) => `${o.engine} (${o.why})`).join(", ")}`);
    if (serving.wave) out.push(`  the whole KV component restarts together: ${serving.wave}`);
    out.push(serving.throughout.length ? `  serving throughout: ${serving.throughout.join(", ")}` : "  serving throughout: none, so nothing is served from the first stop until the swap");
  }
  const section = (title: string, pick: (g: InvalidationSummary["gates"][number]) => InvalidatedEvidence[]): void => {
    const groups = s.gates.filter((g) => pick(g).length > 0);
    if (groups.length === 0) return;
    out.push("", title);
    for (const g of groups) out.push(`  ${g.title}`, ...pick(g).flatMap(entry));
  };
  section("Re-measured (replaced):", (g) => g.replaced);
  section("Re-judged from stored figures, not re-measured (updated):", (g) => g.updated);
  section("New evidence (created):", (g) => g.created);
  section("Removed evidence (deleted):", (g) => g.deleted);
  out.push("", `Kept (${counts.kept}):`);
  for (const gate of GATE_ORDER) {
    const kept = s.kept.filter((k) => k.gate === gate);
    if (kept.length) out.push(`  ${GATE_TITLES[gate]}`, ...kept.map((k) => `    ${line(k)}`));
  }
  return out.join("\n") + "\n";
}
