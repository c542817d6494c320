/**
 * The evidence report as one static HTML page: inline SVG and an inline style sheet, no script, and a
 * Content-Security-Policy that forbids every fetch, so it opens from disk anywhere and shows only what
 * it holds. Every value from the store goes through `esc`.
 */
import { CAPACITY_LEGEND, tpotChart, ttftChart } from "./capacity-chart";
import { capacityTable } from "./capacity-table";
import { esc } from "./escape";
import { heatmap } from "./heatmap";
import { identityTable } from "./identity-table";
import { preflightGrid } from "./preflight-grid";
import { decodeChart, levelLegend, prefillChart } from "./profile-chart";
import { provenanceLine, when } from "./provenance";
import { figure } from "./scale";
import { STYLE } from "./style";
import type { CapacityView, ProfileView, ReportData } from "./types";

/** No source is allowed anything but the inline style: no image, font, frame or connection from anywhere. */
export const CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'";

const none = (what: string) => `<p class="empty-note">${esc(what)}</p>`;

function profileSection(v: ProfileView): string {
  const e = v.row;
  const errors = `decode fit MAPE ${figure(e.decode_fit_mape)}, cross-validation MAPE ${figure(e.decode_cv_mape)}; prefill ${e.prefill_min_tokens}–${e.prefill_max_tokens} tokens, decode ${e.decode_min_requests}–${e.decode_max_requests} requests and ${e.decode_min_kv_tokens}–${e.decode_max_kv_tokens} KV tokens; binds ${e.generation_digest}`;
  const problem = v.samplesProblem ? none(`raw observations not shown: ${v.samplesProblem}`) : "";
  return (
    `<section class="profile" data-engine="${esc(v.engineId)}"><h3>${esc(v.engineId)}</h3>${provenanceLine(v.provenance)}<p class="meta">${esc(errors)}</p>${problem}` +
    `<div class="charts">${prefillChart(v)}${decodeChart(v)}</div><p class="meta">decode lines and points by active requests: ${levelLegend(v)}</p></section>`
  );
}

/** Gate G's capacity trial; only a store holding `load-trial` records has the section at all. */
function capacitySection(v: CapacityView): string {
  const drawn = v.points.length
    ? `<p class="meta">${esc(`${v.points.length} trial point${v.points.length === 1 ? "" : "s"}, each run open loop through the SSH tunnel to the router, its client records reconciled with the router's and engines' counters before an SLO miss counts as a capacity verdict.`)}</p>` +
      `<div class="charts">${ttftChart(v)}${tpotChart(v)}</div><p class="meta">${esc(CAPACITY_LEGEND)}</p>${capacityTable(v)}`
    : "";
  const unreadable = v.unreadable.length ? `<ul class="invalid">${v.unreadable.map((i) => `<li><code>${esc(i.relativePath)}</code>: ${esc(i.reason)}</li>`).join("")}</ul>` : "";
  return `<section class="capacity" id="capacity"><h2>Capacity trial (Gate G)</h2>${drawn}${unreadable}</section>`;
}

export function renderReport(d: ReportData): string {
  const profiles = d.profiles.length ? d.profiles.map(profileSection).join("") : none("no profile evidence in the store");
  const fabric = d.fabric
    ? `${provenanceLine(d.fabric.provenance)}<p class="meta">Each cell: Gbit/s measured from the row's host to the column's host, over its budget. Green meets the budget (deeper with more headroom, up to 100× on a log scale), red is below it, grey is an invalid measurement. Hover for the verdict and when the edge was measured.</p>${heatmap(d.fabric)}`
    : none("no fabric matrix evidence in the store");
  const preflight = d.preflight ? preflightGrid(d.preflight) : none("no preflight evidence in the store");
  const engines = d.identities.length ? identityTable(d.identities) : none("no generation or attestation evidence in the store");
  const invalid = d.invalid.length
    ? `<ul class="invalid">${d.invalid.map((i) => `<li><code>${esc(i.relativePath)}</code>: ${esc(i.reason)}</li>`).join("")}</ul>`
    : none("every record in the store matches its digest");
  const chosen = d.selection === "stack outputs" ? "the records the stack's outputs hold (the newest for kinds the outputs do not name)" : "the newest record of each kind and subject in the store (the stack's outputs were not read)";
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${esc(CONTENT_SECURITY_POLICY)}">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(`Evidence report: stack ${d.stack}`)}</title>
<style>${STYLE}</style></head>
<body data-stack="${esc(d.stack)}">
<h1>${esc(`Evidence report: stack ${d.stack}`)}</h1>
<p class="meta">${esc(`Written ${when(d.generatedAt)} from the evidence store; shows ${chosen}. Times are UTC.`)}</p>
<h2>Profiles</h2>${profiles}
<h2>Fabric edges against budget</h2>${fabric}
<h2>Preflight gates</h2>${preflight}
<h2>Engines: generation and attestation</h2>${engines}
${d.capacity ? capacitySection(d.capacity) : ""}
<h2>Invalid evidence</h2>${invalid}
</body></html>
`;
}
