/** The preflight gates as a grid: a row per engine and per producer → consumer pair, a column per gate. */
import { esc } from "./escape";
import { provenanceLine } from "./provenance";
import type { PreflightView } from "./types";

const MARK = { ok: "✓", fail: "✗", skip: "–" } as const;

export function preflightGrid(v: PreflightView): string {
  const head = `<tr><th scope="col">engine or pair</th>${v.gates.map((g) => `<th scope="col">${esc(g)}</th>`).join("")}</tr>`;
  const rows = v.subjects
    .map((s) => {
      const cells = v.gates
        .map((g) => {
          const c = v.cells[s]?.[g];
          if (!c) return `<td class="none"></td>`;
          return `<td class="gate gate-${c.status}" data-subject="${esc(s)}" data-gate="${esc(g)}" data-status="${c.status}" title="${esc(c.messages.join("\n"))}">${MARK[c.status]}</td>`;
        })
        .join("");
      return `<tr><th scope="row">${esc(s)}</th>${cells}</tr>`;
    })
    .join("");
  const rounds = v.rounds !== null ? `<p>${esc(`${v.rounds} probe round${v.rounds === 1 ? "" : "s"}`)}; hover a cell for the gate's lines.</p>` : "";
  // The whole run's status first: a degraded run passes every gate yet skipped something.
  const list = (title: string, xs: readonly string[]) => (xs.length ? `<p>${esc(title)}</p><ul>${xs.map((x) => `<li>${esc(x)}</li>`).join("")}</ul>` : "");
  const run = v.run ? `<p class="preflight-status" data-status="${esc(v.run.status)}">${esc(`run status: ${v.run.status}`)}</p>${list("skipped", v.run.skipped)}${list("warnings", v.run.warnings)}` : "";
  return `${provenanceLine(v.provenance)}${run}${rounds}<table class="preflight">${head}${rows}</table>`;
}
