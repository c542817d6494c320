/**
 * Linear scales for the report's charts. A chart's axes start at zero, so a reader compares heights
 * directly; the domain's top is rounded up to a tick so the largest point sits inside the frame.
 */

/** The plotting frame inside an SVG, in SVG units. */
export interface Frame {
  readonly left: number;
  readonly top: number;
  readonly width: number;
  readonly height: number;
}

/** A step of 1, 2 or 5 times a power of ten that cuts [0, max] into about `count` parts. */
export function tickStep(max: number, count = 5): number {
  if (!(max > 0) || !Number.isFinite(max)) return 1;
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const unit = raw / power;
  return (unit <= 1 ? 1 : unit <= 2 ? 2 : unit <= 5 ? 5 : 10) * power;
}

/** Ticks from 0 to the first multiple of the step at or above max (which becomes the domain's top). */
export function ticks(max: number, count = 5): number[] {
  const step = tickStep(max, count);
  const n = Math.max(1, Math.ceil(max / step - 1e-9));
  return Array.from({ length: n + 1 }, (_, i) => Number((i * step).toPrecision(12)));
}

/** Maps [0, top] onto a pixel range; `invert` when larger values go up the page. */
export function linear(top: number, start: number, length: number, invert = false): (v: number) => number {
  const span = top > 0 ? top : 1;
  return (v) => (invert ? start + length - (v / span) * length : start + (v / span) * length);
}

/** Coordinates are written with two decimals: enough for the screen, and short. */
export const coord = (v: number): string => String(Math.round(v * 100) / 100);

/** A figure for people: four significant digits, no exponent for ordinary magnitudes. */
export function figure(v: number): string {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e-3 && a < 1e7) return String(Number(v.toPrecision(4)));
  return v.toExponential(3);
}
