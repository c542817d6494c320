/**
 * Gate D's edge matrix as a heat map: rows are sources, columns destinations, each cell the edge's
 * measured Gbit/s coloured by how it stands against its budget. Green deepens with the margin (on a log
 * scale, since a fabric often carries tens of times its budget), red is below budget, grey is an invalid
 * measurement, and a blank cell carries no KV (the diagonal, or no producer/consumer between the hosts).
 */
import { esc } from "./escape";
import { figure } from "./scale";
import type { FabricView, HeatCell } from "./types";

const CELL = 92;
const HEAD = 64;

/** The cell's fill: the ratio measured/budget decides it. */
export function cellColour(cell: HeatCell): string {
  if (cell.verdict === "invalid" || cell.gbps === null) return "#b9b9b9";
  if (cell.verdict === "below") {
    const short = Math.min(1, Math.max(0, 1 - cell.gbps / cell.requiredGbps));
    return `hsl(0, 70%, ${Math.round(72 - short * 30)}%)`;
  }
  // 1x budget is pale, 100x and above is deep.
  const depth = Math.min(1, Math.max(0, Math.log10(Math.max(1, cell.gbps / cell.requiredGbps)) / 2));
  return `hsl(140, 55%, ${Math.round(82 - depth * 47)}%)`;
}

export function cellTitle(cell: HeatCell): string {
  const figureText = cell.gbps === null ? "no figure" : `${figure(cell.gbps)} Gbit/s measured`;
  const ratio = cell.gbps !== null && cell.requiredGbps > 0 ? ` (${figure(cell.gbps / cell.requiredGbps)}× budget)` : "";
  const retrans = cell.retransmits !== null ? `, ${cell.retransmits} retransmits` : "";
  const when = cell.measuredAt ? `; measured ${cell.measuredAt}` : "";
  return `${cell.source} → ${cell.destination}: ${figureText}, budget ${figure(cell.requiredGbps)} Gbit/s, ${cell.verdict}${ratio}${retrans}${when}`;
}

export function heatmap(v: FabricView): string {
  const n = v.hosts.length;
  const size = HEAD + n * CELL + 8;
  const at = new Map(v.cells.map((c) => [`${c.source}\u0000${c.destination}`, c]));
  const heads = v.hosts
    .map(
      (h, i) =>
        `<text class="host" x="${HEAD + i * CELL + CELL / 2}" y="${HEAD - 10}" text-anchor="middle">${esc(h)}</text>` +
        `<text class="host" x="${HEAD - 10}" y="${HEAD + i * CELL + CELL / 2 + 4}" text-anchor="end">${esc(h)}</text>`,
    )
    .join("");
  const cells = v.hosts
    .flatMap((s, i) =>
      v.hosts.map((d, j) => {
        const x = HEAD + j * CELL;
        const y = HEAD + i * CELL;
        const cell = at.get(`${s}\u0000${d}`);
        if (!cell) return `<rect class="empty" x="${x}" y="${y}" width="${CELL}" height="${CELL}"><title>${esc(s === d ? `${s}: same host` : `${s} → ${d}: no KV flows`)}</title></rect>`;
        const label = cell.gbps === null ? "—" : figure(cell.gbps);
        return (
          `<g class="edge" data-source="${esc(s)}" data-destination="${esc(d)}" data-gbps="${cell.gbps ?? ""}" data-required-gbps="${cell.requiredGbps}" data-verdict="${esc(cell.verdict)}">` +
          `<title>${esc(cellTitle(cell))}</title>` +
          `<rect x="${x}" y="${y}" width="${CELL}" height="${CELL}" style="fill:${cellColour(cell)}"/>` +
          `<text class="gbps" x="${x + CELL / 2}" y="${y + CELL / 2 - 2}" text-anchor="middle">${esc(label)}</text>` +
          `<text class="budget" x="${x + CELL / 2}" y="${y + CELL / 2 + 16}" text-anchor="middle">${esc(`of ${figure(cell.requiredGbps)}`)}</text></g>`
        );
      }),
    )
    .join("");
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" role="img" aria-label="fabric edge matrix, Gbit/s against budget" width="${size}" height="${size}" viewBox="0 0 ${size} ${size}">` +
    `<title>fabric edge matrix: rows are sources, columns destinations, Gbit/s against budget</title>` +
    `<text class="corner" x="${HEAD - 10}" y="${HEAD - 10}" text-anchor="end">from \\ to</text>${heads}${cells}</svg>`
  );
}
