/**
 * Per engine: the proved generation (host, vLLM version, process start, generation digest), the
 * attestation read from its sidecar, whether the profile was measured against that same generation,
 * and when each was taken.
 */
import { esc } from "./escape";
import { shortDigest, when } from "./provenance";
import type { IdentityRow } from "./types";

const cellOf = (text: string, title?: string | null) => `<td${title ? ` title="${esc(title)}"` : ""}>${esc(text)}</td>`;

function binds(r: IdentityRow): string {
  const proved = r.generation?.generationDigest;
  if (r.profileGenerationDigest === undefined || !proved) return "—";
  return r.profileGenerationDigest === proved ? "yes" : "no: profiled another generation";
}

export function identityTable(rows: readonly IdentityRow[]): string {
  const head =
    "<tr><th>engine</th><th>host</th><th>vLLM</th><th>process start (s)</th><th>generation</th><th>proved</th>" +
    "<th>attestation</th><th>launch digest</th><th>attestation verdict</th><th>attested</th><th>profile binds it</th></tr>";
  const body = rows
    .map((r) => {
      const g = r.generation;
      const a = r.attestation;
      return (
        `<tr data-engine="${esc(r.engineId)}"><th scope="row">${esc(r.engineId)}</th>` +
        cellOf(g?.host ?? "—") +
        cellOf(g?.version ?? "—") +
        cellOf(g?.processStartTime != null ? String(g.processStartTime) : "—") +
        cellOf(shortDigest(g?.generationDigest), g?.generationDigest) +
        cellOf(g ? when(g.provenance.endedAt) : "—", g?.provenance.relativePath) +
        cellOf(shortDigest(a?.attestationDigest), a?.attestationDigest) +
        cellOf(shortDigest(a?.launchDigest), a?.launchDigest) +
        (a ? `<td class="status status-${esc(a.provenance.status)}" title="${esc(a.provenance.reasons.join("\n"))}">${esc(a.provenance.status)}</td>` : cellOf("—")) +
        cellOf(a ? when(a.provenance.endedAt) : "—", a?.provenance.relativePath) +
        cellOf(binds(r)) +
        "</tr>"
      );
    })
    .join("");
  return `<table class="identities">${head}${body}</table>`;
}
