/**
 * The capacity trial's table: a row per point with its headline figures, the prediction, the departure,
 * the verdict and every reason and reconciliation cause, and which record it came from. A point whose
 * verdict is not `pass` or that departs from prediction carries the same classes as its marks.
 */
import { departs, notPass } from "./capacity-chart";
import { esc } from "./escape";
import { shortDigest, when } from "./provenance";
import { figure } from "./scale";
import type { CapacityView, TrialPointView } from "./types";

const fig = (v: number | null, unit = "") => (v === null ? "—" : `${figure(v)}${unit}`);
const pct = (v: number) => `${v >= 0 ? "+" : ""}${(v * 100).toFixed(1)}%`;
const cell = (text: string, cls?: string, title?: string) => `<td${cls ? ` class="${cls}"` : ""}${title ? ` title="${esc(title)}"` : ""}>${esc(text)}</td>`;

function departure(p: TrialPointView): string {
  const d = p.departure;
  if (!d) return cell("—");
  const text = `${d.flagged ? "flagged" : "within"}: TTFT ${pct(d.ttft)}, TPOT ${pct(d.tpot)} (bound ${figure(d.bound * 100)}%)`;
  return cell(text, d.flagged ? "departs" : undefined);
}

function row(p: TrialPointView): string {
  const verdictClass = p.verdict === "pass" ? "status status-pass" : "status status-fail";
  const reasons = p.reasons.length ? `<ul>${p.reasons.map((r) => `<li>${esc(r)}</li>`).join("")}</ul>` : "";
  const chosen = p.provenance.chosenBy === "stack" ? "held by the stack" : "newest in the store";
  const throughput = p.throughput !== null ? `${figure(p.throughput)} req/s completed` : undefined;
  return (
    `<tr data-point="${esc(p.pointId)}" data-verdict="${esc(p.verdict)}" data-departs="${departs(p)}"${notPass(p) ? ' class="not-pass"' : ""}>` +
    `<th scope="row">${esc(p.pointId)}</th>` +
    cell(`${figure(p.offeredRate)} / ${fig(p.achievedRate)}`, undefined, throughput) +
    cell(`${fig(p.p50TtftMs)} / ${fig(p.p99TtftMs)}`) +
    cell(fig(p.p50TpotMs)) +
    cell(p.goodFraction === null ? "—" : `${figure(p.goodFraction * 100)}%`) +
    cell(p.errors === null ? "—" : `${p.errors}${p.requests !== null ? ` of ${p.requests}` : ""}`) +
    cell(p.predicted ? `${figure(p.predicted.ttftMs)} / ${figure(p.predicted.tpotMs)}` : "—") +
    departure(p) +
    `<td class="${verdictClass}">${esc(p.verdict)}</td>` +
    `<td class="reasons">${reasons}</td>` +
    `<td title="${esc(`${p.provenance.relativePath} ${p.provenance.digest}`)}">${esc(`${when(p.provenance.endedAt)}, ${shortDigest(p.provenance.digest)} (${chosen})`)}</td></tr>`
  );
}

export function capacityTable(v: CapacityView): string {
  const head =
    "<tr><th>point</th><th>offered / achieved rate (req/s)</th><th>TTFT p50 / p99 (ms)</th><th>TPOT p50 (ms)</th><th>goodput</th><th>errors</th>" +
    "<th>predicted TTFT / TPOT (ms)</th><th>departure from prediction</th><th>verdict</th><th>reasons</th><th>record</th></tr>";
  return `<table class="capacity">${head}${v.points.map(row).join("")}</table>`;
}
