/**
 * One engine's profile as two charts: prefill latency against input tokens (every timing, each length's
 * median, and the quadratic narwhal fitted over the medians, with its block-split step when it has one),
 * and decode token interval against resident KV tokens (each cohort's point, and the fitted plane drawn
 * as one line per active-request level, since the interval also grows with requests).
 */
import { splitsPrefill } from "../../profiling/fit";
import { chart, curve } from "./chart";
import { esc } from "./escape";
import { coord, figure } from "./scale";
import type { ProfileView } from "./types";

const ms = (seconds: number) => figure(seconds * 1000);
const tokens = (v: number) => (v >= 10000 ? `${figure(v / 1000)}k` : figure(v));
/** Request levels cycle through these, so a level's points and its line share a colour. */
export const LEVEL_COLOURS = ["#1f6fb2", "#d9730d", "#2e8b57", "#9b3fb5", "#b23b3b", "#5a6b7b"];

export function prefillCurve(v: ProfileView): (n: number) => number {
  const { ttft_a: a, ttft_b: b, ttft_c: c, ttft_split: split } = v.row;
  return (n) => a * n * n + b * n + c + (split !== undefined && splitsPrefill(n, v.prefillBlockTokens) ? split : 0);
}

export function prefillChart(v: ProfileView): string {
  const fit = prefillCurve(v);
  const lo = v.row.prefill_min_tokens;
  const hi = v.row.prefill_max_tokens;
  const xMax = Math.max(hi, ...v.prefill.map((p) => p[0]));
  const yMax = Math.max(fit(hi), ...v.prefill.map((p) => p[1]));
  const formula = `fit: ${figure(v.row.ttft_a)}·n² + ${figure(v.row.ttft_b)}·n + ${figure(v.row.ttft_c)} s${v.row.ttft_split !== undefined ? ` (+ ${figure(v.row.ttft_split)} s when a prompt ends inside a ${v.prefillBlockTokens}-token block past the first)` : ""}, over ${lo}–${hi} tokens`;
  return chart(
    { chart: "prefill", engine: v.engineId, label: `${v.engineId}: prefill latency against input tokens`, xMax, yMax, xTitle: "input tokens", yTitle: "prefill latency (ms)", xTick: tokens, yTick: ms },
    (p) =>
      `<polyline class="fit" points="${curve(p, lo, hi, fit)}"><title>${esc(formula)}</title></polyline>` +
      v.prefill.map(([n, s]) => `<circle class="sample" cx="${coord(p.x(n))}" cy="${coord(p.y(s))}" r="2.5" data-x="${n}" data-y="${s}"><title>${esc(`${n} tokens: ${ms(s)} ms (one timing)`)}</title></circle>`).join("") +
      v.prefillFitPoints.map(([n, s]) => `<circle class="fit-point" cx="${coord(p.x(n))}" cy="${coord(p.y(s))}" r="4" data-x="${n}" data-y="${s}"><title>${esc(`${n} tokens: ${ms(s)} ms median, fit ${ms(fit(n))} ms`)}</title></circle>`).join(""),
  );
}

/** The active-request levels of the decode points, as narwhal's plane reads them (rounded medians). */
export function requestLevels(v: ProfileView): number[] {
  return [...new Set(v.decode.map((d) => Math.round(d[0])))].sort((a, b) => a - b);
}

export function decodeChart(v: ProfileView): string {
  const { tpot_slope: k, tpot_request_slope: r, tpot_intercept: c, decode_min_kv_tokens: lo, decode_max_kv_tokens: hi } = v.row;
  const levels = requestLevels(v);
  const plane = (requests: number) => (kv: number) => c + r * requests + k * kv;
  const xMax = Math.max(hi, ...v.decode.map((d) => d[1]));
  const yMax = Math.max(...levels.map((l) => plane(l)(hi)), ...v.decode.map((d) => d[2]), plane(1)(hi));
  const colour = (requests: number) => LEVEL_COLOURS[Math.max(0, levels.indexOf(Math.round(requests))) % LEVEL_COLOURS.length];
  return chart(
    { chart: "decode", engine: v.engineId, label: `${v.engineId}: decode token interval against resident KV tokens`, xMax, yMax, xTitle: "resident KV tokens", yTitle: "token interval (ms)", xTick: tokens, yTick: ms },
    (p) =>
      levels
        .map((l) => {
          const title = `fit at ${l} request${l === 1 ? "" : "s"}: ${figure(c)} + ${figure(r)}·${l} + ${figure(k)}·kv s, over ${lo}–${hi} KV tokens`;
          return `<polyline class="fit" style="stroke:${colour(l)}" data-requests="${l}" points="${curve(p, lo, hi, plane(l), 8)}"><title>${esc(title)}</title></polyline>`;
        })
        .join("") +
      v.decode
        .map(([req, kv, s]) => {
          const title = `${figure(kv)} KV tokens, ${figure(req)} requests: ${ms(s)} ms per token, fit ${ms(plane(req)(kv))} ms`;
          return `<circle class="decode-point" style="fill:${colour(req)}" cx="${coord(p.x(kv))}" cy="${coord(p.y(s))}" r="4" data-x="${kv}" data-y="${s}" data-requests="${req}"><title>${esc(title)}</title></circle>`;
        })
        .join(""),
  );
}

/** The legend of the decode chart's request levels. */
export function levelLegend(v: ProfileView): string {
  return requestLevels(v)
    .map((l, i) => `<span class="level"><span class="swatch" style="background:${LEVEL_COLOURS[i % LEVEL_COLOURS.length]}"></span>${esc(`${l} request${l === 1 ? "" : "s"}`)}</span>`)
    .join(" ");
}
