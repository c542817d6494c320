/**
 * Gate G's capacity trial as two charts against offered rate: first-token latency (each point's median
 * and p99) and time per output token (median), each with its SLO as a horizontal line and the latency the
 * stored profile fits predict as a line. A point whose verdict is not `pass`, or whose measured median
 * departs from the prediction beyond the bound, is marked and labelled; the table under the charts says why.
 */
import { chart, type Plot } from "./chart";
import { esc } from "./escape";
import { coord, figure, ticks } from "./scale";
import type { CapacityView, TrialPointView } from "./types";

type Metric = "ttft" | "tpot";

interface Series {
  readonly cls: string;
  readonly name: string;
  readonly value: (p: TrialPointView) => number | null;
  readonly radius: number;
}

const SERIES: Record<Metric, readonly Series[]> = {
  ttft: [
    { cls: "measured-p50", name: "median TTFT", value: (p) => p.p50TtftMs, radius: 4 },
    { cls: "measured-p99", name: "p99 TTFT", value: (p) => p.p99TtftMs, radius: 4 },
  ],
  tpot: [{ cls: "measured-p50", name: "median TPOT", value: (p) => p.p50TpotMs, radius: 4 }],
};

const NAMES: Record<Metric, { title: string; y: string; upper: string }> = {
  ttft: { title: "time to first token against offered rate", y: "time to first token (ms)", upper: "TTFT" },
  tpot: { title: "time per output token against offered rate", y: "time per output token (ms)", upper: "TPOT" },
};

const sloOf = (p: TrialPointView, m: Metric) => (p.slo ? (m === "ttft" ? p.slo.ttftMs : p.slo.tpotMs) : null);
const predictedOf = (p: TrialPointView, m: Metric) => (p.predicted ? (m === "ttft" ? p.predicted.ttftMs : p.predicted.tpotMs) : null);
const curveOf = (p: TrialPointView, m: Metric) => p.curve.map((c) => [c.rate, m === "ttft" ? c.ttftMs : c.tpotMs] as const);
const present = (xs: ReadonlyArray<number | null>): number[] => xs.filter((x): x is number => x !== null);

export const departs = (p: TrialPointView): boolean => p.departure?.flagged === true;
export const notPass = (p: TrialPointView): boolean => p.verdict !== "pass";
const pct = (v: number) => `${v >= 0 ? "+" : ""}${(v * 100).toFixed(1)}%`;

/** Values shared by several points (one SLO, one predicted curve) are drawn once, naming the points. */
function grouped<T>(points: readonly TrialPointView[], valueOf: (p: TrialPointView) => T | null): Array<{ value: T; ids: string[] }> {
  const out = new Map<string, { value: T; ids: string[] }>();
  for (const p of points) {
    const v = valueOf(p);
    if (v === null) continue;
    const key = JSON.stringify(v);
    const held = out.get(key) ?? { value: v, ids: [] };
    held.ids.push(p.pointId);
    out.set(key, held);
  }
  return [...out.values()];
}

const naming = (ids: readonly string[]) => `point${ids.length === 1 ? "" : "s"} ${ids.join(", ")}`;

/** The predicted line, cut where it leaves the chart (near saturation the prediction grows without bound). */
function curveLine(plot: Plot, yTop: number, pts: ReadonlyArray<readonly [number, number]>, title: string): string {
  const inside: string[] = [];
  for (const [x, y] of pts) {
    if (y > yTop) break;
    inside.push(`${coord(plot.x(x))},${coord(plot.y(y))}`);
  }
  if (inside.length < 2) return "";
  const cut = inside.length < pts.length ? `; above ${figure(yTop)} ms from ${figure(pts[inside.length][0])} req/s, off the chart` : "";
  return `<polyline class="predicted" points="${inside.join(" ")}"><title>${esc(title + cut)}</title></polyline>`;
}

function metricChart(v: CapacityView, m: Metric): string {
  const pts = v.points;
  const measured = present(pts.flatMap((p) => SERIES[m].map((s) => s.value(p))));
  const slos = grouped(pts, (p) => sloOf(p, m));
  const curves = grouped(pts, (p) => (p.curve.length >= 2 ? curveOf(p, m) : null));
  // The frame fits what was measured, the SLO and the prediction at each point; the curve may leave it.
  const base = Math.max(...measured, ...slos.map((s) => s.value), ...present(pts.map((p) => predictedOf(p, m))), 0);
  const yMax = Math.max(base, ...curves.flatMap((c) => c.value.map(([, y]) => y)).filter((y) => y <= 2 * base));
  const xMax = Math.max(...pts.map((p) => p.offeredRate), ...curves.flatMap((c) => c.value.map(([x]) => x)));
  const yTop = ticks(yMax).at(-1)!;
  const names = NAMES[m];
  return chart(
    { chart: `capacity-${m}`, engine: "fleet", label: `capacity trial: ${names.title}`, xMax, yMax, xTitle: "offered rate (requests/s)", yTitle: names.y, xTick: figure, yTick: figure },
    (plot) => {
      const f = plot.frame;
      const sloLines = slos
        .map(({ value, ids }) => {
          const y = coord(plot.y(value));
          return `<line class="slo" x1="${f.left}" y1="${y}" x2="${f.left + f.width}" y2="${y}" data-y="${value}"><title>${esc(`SLO: ${names.upper} ≤ ${figure(value)} ms (${naming(ids)})`)}</title></line>`;
        })
        .join("");
      const predicted = curves.map(({ value, ids }) => curveLine(plot, yTop, value, `predicted ${names.upper} from the stored profile fits (${naming(ids)})`)).join("");
      const marks = pts
        .map((p) => {
          const flags = `${notPass(p) ? " not-pass" : ""}${departs(p) ? " departs" : ""}`;
          const drawn = SERIES[m].map((s) => ({ s, value: s.value(p) })).filter((d): d is { s: Series; value: number } => d.value !== null);
          const predictedHere = predictedOf(p, m);
          const circles = drawn
            .map(({ s, value }) => {
              const title = `${p.pointId}: ${figure(p.offeredRate)} req/s offered, ${s.name} ${figure(value)} ms${predictedHere !== null ? ` (predicted median ${figure(predictedHere)} ms)` : ""}; verdict ${p.verdict}`;
              return `<circle class="measured ${s.cls}${flags}" cx="${coord(plot.x(p.offeredRate))}" cy="${coord(plot.y(value))}" r="${s.radius}" data-point="${esc(p.pointId)}" data-x="${p.offeredRate}" data-y="${value}" data-verdict="${esc(p.verdict)}"><title>${esc(title)}</title></circle>`;
            })
            .join("");
          const median = drawn[0];
          const ring =
            departs(p) && median && p.departure
              ? `<circle class="departure" cx="${coord(plot.x(p.offeredRate))}" cy="${coord(plot.y(median.value))}" r="8" data-point="${esc(p.pointId)}"><title>${esc(`${p.pointId} departs from prediction: TTFT ${pct(p.departure.ttft)}, TPOT ${pct(p.departure.tpot)} (bound ${figure(p.departure.bound * 100)}%)`)}</title></circle>`
              : "";
          const top = drawn.reduce<number | null>((hi, d) => (hi === null || d.value > hi ? d.value : hi), null);
          const label = [notPass(p) ? p.verdict : "", departs(p) ? "departs" : ""].filter(Boolean).join(", ");
          const text =
            label && top !== null
              ? `<text class="point-label" data-point="${esc(p.pointId)}" x="${coord(plot.x(p.offeredRate) + 7)}" y="${coord(Math.max(f.top + 10, plot.y(top) - 7))}">${esc(`${p.pointId}: ${label}`)}</text>`
              : "";
          return circles + ring + text;
        })
        .join("");
      return sloLines + predicted + marks;
    },
  );
}

export const ttftChart = (v: CapacityView): string => metricChart(v, "ttft");
export const tpotChart = (v: CapacityView): string => metricChart(v, "tpot");

/** What the marks are. */
export const CAPACITY_LEGEND =
  "Filled dots: median; hollow dots: p99 (first-token chart only). Dashed red line: the SLO. Dotted blue line: the latency the stored profile fits predict. " +
  "A red outline marks a point whose verdict is not pass; a purple ring a point whose measured median departs from the prediction beyond the bound. Hover a mark for its figures.";
