/**
 * How disturbed the machine that times the requests (where the profiler runs; with `via`, the SSH forward
 * through the router host ends here) was while one sample was taken. A sample's latency is the engine's
 * only while the timing side ran when it was due: a stream read or a completion's end stamped late adds the
 * machine's load, not the engine's time, to the figure.
 *
 * Two readings over each sample's wall time:
 * - lateness, which decides: the share of it in which the profiler's own timers fired late
 *   (perf_hooks.monitorEventLoopDelay). It is direct evidence that the timing side, not the engine, was
 *   behind, whatever made it so (a CPU taken by other work, or another engine's profile parsed in the
 *   same process), and every platform has it;
 * - pressure, kept beside it for the operator: Linux PSI (`/proc/pressure/cpu`, its `some` line's
 *   `total`, microseconds in which some runnable task of the machine waited for a CPU), null where the
 *   kernel has no PSI (built without CONFIG_PSI, or booted with psi=0). It says the machine was busy, not
 *   that the profiler was: on a machine of few cores running other work it stays between a half and all
 *   of every sample whether or not the samples were disturbed, so it cannot single out a sample.
 *
 * Pure logic; the monitor, the file and the clock are handed in.
 */

/**
 * One sample's contention. `lateness` decides whether the sample was disturbed; `pressure` is the
 * machine's CPU pressure over the same time (null where PSI is absent), kept as the operator's figure.
 */
export interface ContentionReading {
  readonly wallS: number;
  /** Seconds the profiler's timers fired late within `wallS`, and their share (within [0, 1]). */
  readonly lateS: number;
  readonly lateness: number;
  /** PSI `some` share: the part of `wallS` in which some runnable task of the machine waited for a CPU. */
  readonly pressure: number | null;
}

export interface ContentionGauge {
  /** Whether PSI could be read when the gauge was made. */
  readonly pressure: boolean;
  /** Starts a reading; the returned function ends it. */
  begin(): () => ContentionReading;
}

/** The `some` line's cumulative stall of `/proc/pressure/cpu`, microseconds; undefined when the text has none. */
export function psiSomeTotalUs(text: string): number | undefined {
  const line = /^some\s+(.*)$/m.exec(text)?.[1];
  const total = line && /(?:^|\s)total=(\d+)(?:\s|$)/.exec(line)?.[1];
  if (!total) return undefined;
  const us = Number(total);
  return Number.isSafeInteger(us) ? us : undefined;
}

/** The share of `wallS` a stall of `stalledS` took, within [0, 1] (counters read apart can overshoot a little). */
export function stalledFraction(stalledS: number, wallS: number): number {
  if (!(wallS > 0) || !(stalledS > 0)) return 0;
  return Math.min(1, stalledS / wallS);
}

/**
 * What the gauge needs of perf_hooks' event-loop delay histogram: cumulative, in nanoseconds. Each
 * recorded delay is one whole interval between the monitor's timer firings, `resolutionMs` when on time.
 */
export interface LoopDelayHistogram {
  readonly count: number;
  readonly mean: number;
}

/** Seconds the loop's timer has fired late in total: every interval beyond its resolution. */
export function loopLatenessS(h: LoopDelayHistogram, resolutionMs: number): number {
  if (!h.count || !Number.isFinite(h.mean)) return 0;
  return (h.count * Math.max(0, h.mean - resolutionMs * 1e6)) / 1e9;
}

export interface GaugeIo {
  /** The event-loop delay monitor, enabled, with its period. */
  loop: LoopDelayHistogram;
  resolutionMs: number;
  /** Monotonic seconds. */
  now(): number;
  /** The text of `/proc/pressure/cpu`; throws (or is absent) where PSI is not available. */
  readPsi?(): string;
}

/**
 * The gauge: the profiler's own lateness for the decision, and PSI's CPU pressure beside it when the
 * kernel has PSI (a PSI read that fails mid-run leaves that sample's pressure unknown, never invented).
 */
export function contentionGauge(io: GaugeIo): ContentionGauge {
  const psi = (): number | undefined => {
    if (!io.readPsi) return undefined;
    try {
      return psiSomeTotalUs(io.readPsi());
    } catch {
      return undefined;
    }
  };
  const pressure = psi() !== undefined;
  return {
    pressure,
    begin() {
      const t0 = io.now();
      const late0 = loopLatenessS(io.loop, io.resolutionMs);
      const psi0 = pressure ? psi() : undefined;
      return () => {
        const wallS = io.now() - t0;
        const lateS = Math.max(0, loopLatenessS(io.loop, io.resolutionMs) - late0);
        const psi1 = pressure ? psi() : undefined;
        const stalled = psi0 === undefined || psi1 === undefined ? null : stalledFraction((psi1 - psi0) / 1e6, wallS);
        return { wallS, lateS, lateness: stalledFraction(lateS, wallS), pressure: stalled };
      };
    },
  };
}
