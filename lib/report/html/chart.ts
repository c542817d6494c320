/**
 * The frame every chart of the report shares: an SVG with both axes from zero, ticks, labels, and data
 * attributes stating the frame and the domain, so the page can be checked (and read back) by machine:
 * a point's `cx` is `left + x / xTop * width`, its `cy` is `top + height - y / yTop * height`.
 */
import { esc } from "./escape";
import { coord, linear, ticks, type Frame } from "./scale";

export const CHART_WIDTH = 460;
export const CHART_HEIGHT = 300;
const FRAME: Frame = { left: 70, top: 16, width: 370, height: 230 };

export interface ChartSpec {
  /** What the chart is (`prefill`, `decode`): the `data-chart` attribute. */
  readonly chart: string;
  readonly engine: string;
  readonly label: string;
  /** Largest x and y to show; each is rounded up to a tick. */
  readonly xMax: number;
  readonly yMax: number;
  readonly xTitle: string;
  readonly yTitle: string;
  readonly xTick: (v: number) => string;
  readonly yTick: (v: number) => string;
}

export interface Plot {
  readonly x: (v: number) => number;
  readonly y: (v: number) => number;
  readonly frame: Frame;
}

/** Wraps the marks drawn by `body` in the chart's frame and axes. */
export function chart(spec: ChartSpec, body: (plot: Plot) => string): string {
  const xs = ticks(spec.xMax);
  const ys = ticks(spec.yMax);
  const xTop = xs[xs.length - 1];
  const yTop = ys[ys.length - 1];
  const f = FRAME;
  const plot: Plot = { x: linear(xTop, f.left, f.width), y: linear(yTop, f.top, f.height, true), frame: f };
  const bottom = f.top + f.height;
  const grid = [
    ...xs.map((t) => `<line class="grid" x1="${coord(plot.x(t))}" y1="${f.top}" x2="${coord(plot.x(t))}" y2="${bottom}"/><text class="tick" x="${coord(plot.x(t))}" y="${bottom + 14}" text-anchor="middle">${esc(spec.xTick(t))}</text>`),
    ...ys.map((t) => `<line class="grid" x1="${f.left}" y1="${coord(plot.y(t))}" x2="${f.left + f.width}" y2="${coord(plot.y(t))}"/><text class="tick" x="${f.left - 6}" y="${coord(plot.y(t) + 4)}" text-anchor="end">${esc(spec.yTick(t))}</text>`),
  ].join("");
  const titles =
    `<text class="axis-title" x="${f.left + f.width / 2}" y="${CHART_HEIGHT - 8}" text-anchor="middle">${esc(spec.xTitle)}</text>` +
    `<text class="axis-title" transform="translate(14 ${f.top + f.height / 2}) rotate(-90)" text-anchor="middle">${esc(spec.yTitle)}</text>`;
  const frame = `<rect class="frame" x="${f.left}" y="${f.top}" width="${f.width}" height="${f.height}"/>`;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" aria-label="${esc(spec.label)}" data-chart="${esc(spec.chart)}" data-engine="${esc(spec.engine)}" ` +
    `data-frame="${f.left} ${f.top} ${f.width} ${f.height}" data-domain="0 ${xTop} 0 ${yTop}" width="${CHART_WIDTH}" height="${CHART_HEIGHT}" viewBox="0 0 ${CHART_WIDTH} ${CHART_HEIGHT}">` +
    `<title>${esc(spec.label)}</title>${frame}${grid}${titles}${body(plot)}</svg>`
  );
}

/** A polyline through `f` sampled evenly on [from, to]. */
export function curve(plot: Plot, from: number, to: number, f: (x: number) => number, steps = 96): string {
  const pts: string[] = [];
  for (let i = 0; i <= steps; i++) {
    const x = from + ((to - from) * i) / steps;
    pts.push(`${coord(plot.x(x))},${coord(plot.y(f(x)))}`);
  }
  return pts.join(" ");
}
