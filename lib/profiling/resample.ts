/**
 * Re-sampling what the machine or another client disturbed. Each sample of a sweep (one prefill
 * completion, one decode replicate) is taken under a contention reading of the machine that times it
 * (./contention.ts) and, with a traffic witness, a count of what the engine served besides the sample's
 * own requests (lib/engine/reservation.ts). A sample during which the profiler's timers ran late for more
 * than {@link DISTURBED_LATENESS} of its time measured the machine as much as the engine; one the engine
 * shared with another request (a serving router's traffic, its readmission check) measured that request
 * too, and its re-take first waits, within the witness's bound, for the engine to serve nobody else (a
 * serving router takes a restarted engine out at its next identity check). Either is taken again, at most
 * {@link RETAKES_PER_SAMPLE} times; a sample neither disturbed is kept as it is, never taken again. Each
 * phase of a sweep (prefill, decode) may re-take at most as many samples as it keeps, so a sweep at most
 * doubles and the prefill phase cannot spend what the decode phase needs. Of a sample's takes the one the
 * engine had to itself is kept, then the least late, and only that take enters the sweep's samples: the
 * fits are narwhal-profile's over what was kept. Which take is kept depends on those readings alone, never
 * on the latency measured, so the choice does not pull the figures either way.
 */
import type { ContentionGauge, ContentionReading } from "./contention";

/** A sample is disturbed when the profiler's timers ran late for more than this share of its wall time. */
export const DISTURBED_LATENESS = 0.1;
/** Takes of one sample beyond the first, at most. */
export const RETAKES_PER_SAMPLE = 2;
/** Re-takes a phase may spend per sample it keeps: its budget is this times its sample count. */
export const RETAKES_PER_PHASE_SAMPLE = 1;

/**
 * What another client did to one sample: `begin` reads the engine before the sample and returns the
 * closing read, which resolves to the requests the engine served besides the sample's own. `quiet`
 * waits, within the witness's bound, until the engine serves nobody else, and resolves to the
 * milliseconds it waited.
 */
export interface TrafficWitness {
  begin(): Promise<() => Promise<number>>;
  quiet(): Promise<number>;
}

/** One sample that was taken more than once: every take's lateness (and pressure, and foreign requests with a witness), in order, and which was kept. */
export interface Retaken {
  readonly point: string;
  readonly lateness: readonly number[];
  readonly pressure: ReadonlyArray<number | null>;
  readonly foreign?: readonly number[];
  readonly kept: number;
}

/** A sweep's re-sampling, as evidence and messages show it. */
export interface ResampleSummary {
  readonly threshold: number;
  /** Re-takes the sweep could spend, and whether a phase spent all of its share. */
  readonly budget: number;
  readonly spent: boolean;
  /** Samples the sweep kept (each once, however often it was taken). */
  readonly samples: number;
  /** Kept samples whose first take was disturbed. */
  readonly disturbed: number;
  /** Takes made again, in all; never above `budget`. */
  readonly retaken: number;
  /** Kept samples still over the threshold (their re-takes, or the budget, ran out). */
  readonly keptDisturbed: number;
  /** With a traffic witness: kept samples whose first take the engine shared with other requests, kept samples it still shared, and those requests over every take. */
  readonly shared?: number;
  readonly keptShared?: number;
  readonly foreignRequests?: number;
  /** With a traffic witness: seconds the sweep waited, before re-taking a shared sample, for the engine to serve nobody else. */
  readonly quietWaitS?: number;
  /** The profiler's lateness over every take: highest and mean share of a sample's time. */
  readonly peakLateness: number;
  readonly meanLateness: number;
  /** The machine's CPU pressure (PSI some) over every take; null without PSI. */
  readonly peakPressure: number | null;
  readonly meanPressure: number | null;
  readonly points: readonly Retaken[];
}

export interface ResampleOptions {
  /** Re-takes this sampler may spend in all. */
  budget: number;
  /** What the engine served besides each sample; without it only the machine decides. */
  traffic?: TrafficWitness;
  threshold?: number;
  perSample?: number;
}

/** The re-sampling of one phase of one sweep. */
export class Resampler {
  private readonly threshold: number;
  private readonly perSample: number;
  readonly budget: number;
  private retaken = 0;
  private samples = 0;
  private disturbed = 0;
  private keptDisturbed = 0;
  private shared = 0;
  private keptShared = 0;
  private foreignRequests = 0;
  private quietWaitMs = 0;
  private readonly traffic: TrafficWitness | undefined;
  private readonly readings: ContentionReading[] = [];
  private readonly points: Retaken[] = [];

  constructor(
    private readonly gauge: ContentionGauge,
    o: ResampleOptions,
  ) {
    this.threshold = o.threshold ?? DISTURBED_LATENESS;
    this.perSample = o.perSample ?? RETAKES_PER_SAMPLE;
    this.budget = o.budget;
    this.traffic = o.traffic;
  }

  /**
   * Takes `sample` (which must not record anything itself) until a take is undisturbed or the sample's or
   * the phase's re-takes are spent; returns the kept take's value: one the engine had to itself, then
   * the least late.
   */
  async take<T>(point: string, sample: () => Promise<T>): Promise<T> {
    const takes: Array<{ value: T; reading: ContentionReading; foreign: number }> = [];
    const disturbed = (t: (typeof takes)[number]) => t.reading.lateness > this.threshold || t.foreign > 0;
    for (;;) {
      const closeTraffic = await this.traffic?.begin();
      const end = this.gauge.begin();
      const value = await sample();
      const reading = end();
      const foreign = closeTraffic ? await closeTraffic() : 0;
      takes.push({ value, reading, foreign });
      this.readings.push(reading);
      this.foreignRequests += foreign;
      if (!disturbed(takes[takes.length - 1]) || takes.length > this.perSample || this.retaken >= this.budget) break;
      this.retaken++;
      if (this.traffic && foreign > 0) this.quietWaitMs += await this.traffic.quiet();
    }
    let kept = 0;
    const better = (a: (typeof takes)[number], b: (typeof takes)[number]) => (a.foreign > 0) !== (b.foreign > 0) ? a.foreign === 0 : a.reading.lateness < b.reading.lateness;
    for (let i = 1; i < takes.length; i++) if (better(takes[i], takes[kept])) kept = i;
    this.samples++;
    if (takes[0].reading.lateness > this.threshold) this.disturbed++;
    if (takes[kept].reading.lateness > this.threshold) this.keptDisturbed++;
    if (takes[0].foreign > 0) this.shared++;
    if (takes[kept].foreign > 0) this.keptShared++;
    if (takes.length > 1) {
      this.points.push({
        point,
        lateness: takes.map((t) => asJudged(t.reading.lateness, this.threshold)),
        pressure: takes.map((t) => (t.reading.pressure === null ? null : round(t.reading.pressure))),
        ...(this.traffic ? { foreign: takes.map((t) => t.foreign) } : {}),
        kept,
      });
    }
    return takes[kept].value;
  }

  summary(): ResampleSummary {
    return summarize(this.threshold, [this]);
  }

  /** What {@link summarize} reads. */
  state() {
    return {
      budget: this.budget,
      retaken: this.retaken,
      samples: this.samples,
      disturbed: this.disturbed,
      keptDisturbed: this.keptDisturbed,
      witnessed: this.traffic !== undefined,
      shared: this.shared,
      keptShared: this.keptShared,
      foreignRequests: this.foreignRequests,
      quietWaitMs: this.quietWaitMs,
      readings: this.readings,
      points: this.points,
    };
  }
}

const round = (x: number) => Math.round(x * 1e4) / 1e4;

/**
 * A lateness as evidence shows it, to four decimals but on the side of the threshold it was judged on:
 * a take judged disturbed at 0.10004 is recorded 0.1001, not 0.1, which would read as undisturbed.
 */
export function asJudged(lateness: number, threshold: number): number {
  const r = round(lateness);
  if (lateness > threshold && !(r > threshold)) return round(threshold + 1e-4);
  if (!(lateness > threshold) && r > threshold) return threshold;
  return r;
}
const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

/** One sweep's summary over its phases' samplers. */
export function summarize(threshold: number, phases: readonly Resampler[]): ResampleSummary {
  const s = phases.map((p) => p.state());
  const sum = (f: (x: (typeof s)[number]) => number) => s.reduce((n, x) => n + f(x), 0);
  const readings = s.flatMap((x) => x.readings);
  const late = readings.map((r) => r.lateness);
  const pressures = readings.map((r) => r.pressure).filter((p): p is number => p !== null);
  return {
    threshold,
    budget: sum((x) => x.budget),
    spent: s.some((x) => x.retaken >= x.budget && x.budget > 0),
    samples: sum((x) => x.samples),
    disturbed: sum((x) => x.disturbed),
    retaken: sum((x) => x.retaken),
    keptDisturbed: sum((x) => x.keptDisturbed),
    ...(s.some((x) => x.witnessed) ? { shared: sum((x) => x.shared), keptShared: sum((x) => x.keptShared), foreignRequests: sum((x) => x.foreignRequests), quietWaitS: Math.round(sum((x) => x.quietWaitMs) / 100) / 10 } : {}),
    peakLateness: late.length ? asJudged(Math.max(...late), threshold) : 0,
    meanLateness: late.length ? round(mean(late)) : 0,
    peakPressure: pressures.length ? round(Math.max(...pressures)) : null,
    meanPressure: pressures.length ? round(mean(pressures)) : null,
    points: s.flatMap((x) => x.points),
  };
}

const percent = (x: number) => `${Math.round(x * 100)}%`;

/**
 * One sweep's re-sampling in a few words, for a message: `3 samples re-taken (the profiler's timers late
 * up to 24% of a sample's time, mean 6%, over 10% in 4 samples; CPU pressure up to 100%, mean 84%;
 * budget 15)`, with how many the engine shared with other requests when it did, `budget spent` when a phase
 * ran out, or `no sample re-taken (...)`.
 */
export function resampleBrief(s: ResampleSummary): string {
  const late = `the profiler's timers late up to ${percent(s.peakLateness)} of a sample's time, mean ${percent(s.meanLateness)}`;
  const pressure = s.peakPressure === null ? "" : `; CPU pressure up to ${percent(s.peakPressure)}, mean ${percent(s.meanPressure!)}`;
  if (!s.retaken) return `no sample re-taken (${late}, threshold ${percent(s.threshold)}${pressure})`;
  const still = s.keptDisturbed ? `, ${s.keptDisturbed} kept over the threshold ${percent(s.threshold)}` : "";
  const shared = s.shared ? `; ${s.shared} shared the engine with other requests${s.keptShared ? `, ${s.keptShared} kept so` : ""}` : "";
  return `${s.retaken} ${s.retaken === 1 ? "sample" : "samples"} re-taken (${late}${still}${pressure}${shared}; budget ${s.budget}${s.spent ? ", spent" : ""})`;
}

/** A sweep's stop carries its re-sampling, so a try a stop ended still counts its re-takes. */
export function withResamples<E extends Error>(err: E, s: ResampleSummary | undefined): E {
  return s ? Object.assign(err, { resampled: s }) : err;
}

export const resamplesIn = (err: unknown): ResampleSummary | undefined => (err as { resampled?: ResampleSummary } | null)?.resampled;

/** A sweep's re-sampling without the per-sample detail (its evidence record keeps that): what outputs show. */
export type ResampledFigures = Omit<ResampleSummary, "points">;

export function resampledFigures(s: ResampleSummary): ResampledFigures {
  const { points: _points, ...figures } = s;
  return figures;
}
