/**
 * The calibration run: which groups (directed path × input length) are sampled, how many attempts each
 * gets, and what the samples mean. Every attempt is kept, failed ones included; a group that fails
 * more often than allowed stops the run so its failures can be diagnosed before a deadline is chosen.
 * I/O is the sampler's.
 */
import { calibrate, type CalibrationGroup, type CalibrationResult } from "./calibration";
import type { Pair, Probe } from "./pairs";
import { runProbes, type ScheduleMode } from "./schedule";

export type SampleFailure = "prefill_failed" | "engine_error" | "observation_expired" | "no_tokens";

/** One attempt, as measured from the router host. */
export interface SampleRecord {
  readonly producer: string;
  readonly consumer: string;
  /** The input length asked for. */
  readonly inputTokens: number;
  readonly attempt: number;
  readonly status: "completed" | "failed";
  /** The prompt tokens the producer reports (`usage.prompt_tokens`), when it reports them. */
  readonly promptTokens: number | null;
  readonly prefillSeconds: number | null;
  /** From starting the decode HTTP request to its first generated token. */
  readonly firstTokenSeconds: number | null;
  readonly failure?: SampleFailure;
  readonly error?: string;
  readonly at: string;
}

export interface Sampler {
  sample(path: Pair, inputTokens: number, attempt: number): Promise<SampleRecord>;
}

export interface CalibrationRunPlan {
  readonly paths: readonly Pair[];
  readonly inputLengths: readonly number[];
  readonly samplesPerGroup: number;
  readonly maxFailuresPerGroup: number;
  readonly schedule: ScheduleMode;
}

export interface CalibrationRun {
  readonly groups: CalibrationGroup[];
  readonly samples: SampleRecord[];
  /** Groups that stopped short of their samples, with why. */
  readonly incomplete: string[];
}

/**
 * Input lengths spanning the served context: a short prompt, a quarter, a half, and the longest input
 * the engine admits (max_model_len − 1 leaves the one output token the probe needs).
 */
export function defaultInputLengths(maxModelLen: number): number[] {
  if (!Number.isInteger(maxModelLen) || maxModelLen < 2) throw new Error(`calibration: max_model_len ${maxModelLen} admits no input with an output token`);
  const longest = maxModelLen - 1;
  return [...new Set([Math.min(128, longest), Math.round(longest / 4), Math.round(longest / 2), longest].filter((n) => n >= 1))].sort((a, b) => a - b);
}

const groupKey = (producer: string, consumer: string, inputTokens: number) => `${producer}\u0000${consumer}\u0000${inputTokens}`;

export function describeGroup(g: { producer: string; consumer: string; inputTokens: number }): string {
  return `${g.producer} -> ${g.consumer} at ${g.inputTokens} tokens`;
}

export async function runCalibration(plan: CalibrationRunPlan, sampler: Sampler): Promise<CalibrationRun> {
  if (!plan.paths.length) throw new Error("calibration: no directed path to sample (every engine pinned to one role?)");
  if (!plan.inputLengths.length) throw new Error("calibration: no input length to sample");
  const samples: SampleRecord[] = [];
  const incomplete: string[] = [];
  const byGroup = new Map<string, SampleRecord[]>();
  for (const inputTokens of plan.inputLengths) {
    const records = (p: Pair) => byGroup.get(groupKey(p.producer, p.consumer, inputTokens)) ?? [];
    const completed = (p: Pair) => records(p).filter((r) => r.status === "completed").length;
    const failed = (p: Pair) => records(p).filter((r) => r.status === "failed").length;
    for (;;) {
      // Each batch asks every unfinished path for the samples it still lacks, but never for more than
      // its remaining failure allowance, so a broken path stops after that many attempts.
      const open = plan.paths.filter((p) => completed(p) < plan.samplesPerGroup && failed(p) < plan.maxFailuresPerGroup);
      if (!open.length) break;
      const probes: Probe[] = open.flatMap((p) => {
        const base = records(p).length;
        const count = Math.min(plan.samplesPerGroup - completed(p), plan.maxFailuresPerGroup - failed(p));
        return Array.from({ length: count }, (_, k) => ({ producer: p.producer, consumer: p.consumer, repeat: base + k }));
      });
      const ran = await runProbes(probes, plan.schedule, (probe) => sampler.sample(probe, inputTokens, probe.repeat));
      for (const { probe, result } of ran) {
        const key = groupKey(probe.producer, probe.consumer, inputTokens);
        byGroup.set(key, [...(byGroup.get(key) ?? []), result]);
        samples.push(result);
      }
    }
    for (const p of plan.paths) {
      if (completed(p) < plan.samplesPerGroup) {
        const last = records(p).filter((r) => r.status === "failed").slice(-1)[0];
        incomplete.push(`${describeGroup({ ...p, inputTokens })}: ${completed(p)} of ${plan.samplesPerGroup} samples completed, ${failed(p)} attempts failed (last: ${last?.failure ?? "?"}: ${last?.error ?? "?"})`);
      }
    }
  }
  const groups: CalibrationGroup[] = plan.inputLengths.flatMap((inputTokens) =>
    plan.paths.map((p) => {
      const rs = byGroup.get(groupKey(p.producer, p.consumer, inputTokens)) ?? [];
      const ok = rs.filter((r) => r.status === "completed");
      return {
        producer: p.producer,
        consumer: p.consumer,
        inputTokens,
        firstTokenSeconds: ok.map((r) => r.firstTokenSeconds!),
        prefillSeconds: ok.map((r) => r.prefillSeconds!),
        failures: rs.filter((r) => r.status === "failed").map((r) => `attempt ${r.attempt} ${r.failure}: ${r.error ?? ""}`),
      };
    }),
  );
  return { groups, samples, incomplete };
}

/** The proposal, or an error naming every group that needs diagnosis first. */
export function proposeDeadline(run: CalibrationRun, opts: { routerOverheadS: number; clientTtftS: number; minSamples: number }): CalibrationResult {
  if (run.incomplete.length) throw new Error(`calibration stopped before enough samples; diagnose the failed paths before selecting a serving deadline: ${run.incomplete.join("; ")}`);
  return calibrate(run.groups, opts);
}
