/**
 * Gate D's fabric budget: how many Gbit/s a directed edge must carry for one budget group's handoffs,
 * computed from that group's captured cache layout and the stack's `fabric` workload inputs, and the
 * verdict of a recorded measurement against it.
 *
 *   payload bytes  = KV bytes per token (every KV layer, every TP rank) × prompt tokens
 *   required Gbit/s = 8 × payload × max(handoff rate, burst / budget seconds) × headroom / 1e9
 *
 * Bytes per token come from the live capture, never from the model card: per rank and layer vLLM holds
 * 2 · max(1, kv_heads / TP) · head_dim · dtype bytes (fp8 KV: 1 byte; MLA: (kv_lora_rank +
 * qk_rope_head_dim) · dtype bytes, no factor 2). Heads that do not divide by TP, and MLA's latent cache,
 * are replicated on every rank, so the sum over ranks can exceed the model's own total; the sum is what
 * the producer's ranks hold and what a handoff moves.
 *
 * A verdict is recomputed, never re-measured, when the budget moves (design, section 3).
 */
import { RUNBOOK_DEFAULTS } from "../config/defaults";
import type { CacheRankLayout } from "../engine/cache-layout";
import { FabricError } from "./errors";

/** The stack config's `fabric` budget inputs (extra keys such as `iperfPort` are ignored). */
export interface FabricBudgetInputs {
  /** Prompt tokens per handoff. */
  readonly promptTokens: number;
  /** Handoffs per second. */
  readonly handoffRate: number;
  /** Handoffs arriving together. */
  readonly burst: number;
  /** Seconds a burst may take. */
  readonly budgetS: number;
  /** Safety factor, at least 1. */
  readonly headroom: number;
}

/** The runbook's first-trial inputs: 1024 prompt tokens, 1 handoff/s, burst 1, 1 s budget, headroom 1.25. */
export const FIRST_TRIAL_BUDGET_INPUTS: FabricBudgetInputs = RUNBOOK_DEFAULTS.fabric;

/** What the budget reads of a captured layout (lib/engine/cache-layout's `CacheLayout` fits). */
export interface BudgetLayout {
  readonly tensorParallelSize: number;
  readonly ranks: ReadonlyArray<Pick<CacheRankLayout, "rank" | "numLayers" | "bytesPerToken">>;
  /** Must equal the sum of the ranks' `bytesPerToken`. */
  readonly bytesPerTokenAllRanks: number;
}

export interface FabricBudget {
  /** Exactly the five inputs used (what the budget was computed against). */
  readonly inputs: FabricBudgetInputs;
  readonly tensorParallelSize: number;
  /** One token across every KV layer, per rank, in rank order. */
  readonly bytesPerTokenPerRank: ReadonlyArray<number>;
  /** One token across every KV layer and every rank. */
  readonly bytesPerToken: number;
  /** bytesPerToken × promptTokens: what one handoff moves. */
  readonly payloadBytes: number;
  /** max(handoffRate, burst / budgetS). */
  readonly handoffsPerSecond: number;
  readonly requiredGbps: number;
  /** The formula with the numbers filled in, for the evidence record. */
  readonly formula: string;
}

function checkInputs(inputs: FabricBudgetInputs): FabricBudgetInputs {
  const picked: FabricBudgetInputs = {
    promptTokens: inputs.promptTokens,
    handoffRate: inputs.handoffRate,
    burst: inputs.burst,
    budgetS: inputs.budgetS,
    headroom: inputs.headroom,
  };
  const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
  const problems = [
    !(Number.isSafeInteger(picked.promptTokens) && picked.promptTokens > 0) ? `fabric.promptTokens ${JSON.stringify(picked.promptTokens)} (a positive integer)` : "",
    !(finite(picked.handoffRate) && picked.handoffRate > 0) ? `fabric.handoffRate ${JSON.stringify(picked.handoffRate)} (handoffs per second, above 0)` : "",
    !(Number.isSafeInteger(picked.burst) && picked.burst > 0) ? `fabric.burst ${JSON.stringify(picked.burst)} (a positive integer)` : "",
    !(finite(picked.budgetS) && picked.budgetS > 0) ? `fabric.budgetS ${JSON.stringify(picked.budgetS)} (seconds, above 0)` : "",
    !(finite(picked.headroom) && picked.headroom >= 1) ? `fabric.headroom ${JSON.stringify(picked.headroom)} (at least 1)` : "",
  ].filter(Boolean);
  if (problems.length) throw new FabricError("NARWHAL_FABRIC_BUDGET_INPUT", `the fabric budget inputs are out of range: ${problems.join(", ")}; fix them in the stack's fabric section`);
  return picked;
}

function checkLayout(layout: BudgetLayout): number[] {
  const ranks = [...layout.ranks].sort((a, b) => a.rank - b.rank);
  const problems: string[] = [];
  if (ranks.length === 0) problems.push("it has no ranks");
  if (ranks.length !== layout.tensorParallelSize) problems.push(`it has ${ranks.length} rank(s) for tensor parallel size ${layout.tensorParallelSize}`);
  for (const r of ranks) {
    if (!(Number.isSafeInteger(r.bytesPerToken) && r.bytesPerToken > 0)) problems.push(`rank ${r.rank} has ${JSON.stringify(r.bytesPerToken)} bytes per token`);
  }
  const sum = ranks.reduce((s, r) => s + r.bytesPerToken, 0);
  if (problems.length === 0 && sum !== layout.bytesPerTokenAllRanks) {
    problems.push(`bytesPerTokenAllRanks is ${layout.bytesPerTokenAllRanks}, but its ranks add up to ${sum}`);
  }
  if (problems.length) throw new FabricError("NARWHAL_FABRIC_BUDGET_LAYOUT", `the captured cache layout cannot give a fabric payload: ${problems.join("; ")}; recapture the engine's cache`);
  return ranks.map((r) => r.bytesPerToken);
}

function describePerToken(layout: BudgetLayout, perRank: number[]): string {
  const layers = [...new Set(layout.ranks.map((r) => r.numLayers))];
  const over = layers.length === 1 ? ` over ${layers[0]} layers` : "";
  if (perRank.length === 1) return `${perRank[0]} B/token${over}, 1 rank`;
  const uniform = perRank.every((b) => b === perRank[0]);
  return uniform ? `${perRank.length} ranks × ${perRank[0]} B/token${over}` : `${perRank.join(" + ")} B/token${over}`;
}

/** The budget one group's representative layout needs under the workload inputs. */
export function budgetFor(layout: BudgetLayout, inputs: FabricBudgetInputs = FIRST_TRIAL_BUDGET_INPUTS): FabricBudget {
  const i = checkInputs(inputs);
  const perRank = checkLayout(layout);
  const bytesPerToken = layout.bytesPerTokenAllRanks;
  const payloadBytes = bytesPerToken * i.promptTokens;
  if (!Number.isSafeInteger(payloadBytes)) {
    throw new FabricError("NARWHAL_FABRIC_BUDGET_INPUT", `the payload ${bytesPerToken} B/token × ${i.promptTokens} tokens is beyond exact integer range; lower fabric.promptTokens`);
  }
  const handoffsPerSecond = Math.max(i.handoffRate, i.burst / i.budgetS);
  const requiredGbps = (8 * payloadBytes * handoffsPerSecond * i.headroom) / 1e9;
  const formula =
    `required Gbit/s = 8 × payload × max(handoffRate, burst / budgetS) × headroom / 1e9` +
    ` = 8 × ${payloadBytes} B × max(${i.handoffRate}/s, ${i.burst} / ${i.budgetS} s) × ${i.headroom} / 1e9 = ${requiredGbps} Gbit/s;` +
    ` payload = ${bytesPerToken} B/token (${describePerToken(layout, perRank)}) × ${i.promptTokens} prompt tokens = ${payloadBytes} B`;
  return { inputs: i, tensorParallelSize: layout.tensorParallelSize, bytesPerTokenPerRank: perRank, bytesPerToken, payloadBytes, handoffsPerSecond, requiredGbps, formula };
}

// ---------- verdict ----------

export type FabricVerdict = "met" | "below" | "invalid";

/** `record-edge`'s exit codes: 0 met, 1 below, 2 invalid. */
export const VERDICT_EXIT_CODES: Readonly<Record<FabricVerdict, 0 | 1 | 2>> = Object.freeze({ met: 0, below: 1, invalid: 2 });

/** A recorded measurement: its rate and the samples it came from (a count, or the per-sample rates). */
export interface FabricMeasurement {
  readonly gbps: number | null | undefined;
  readonly samples: number | ReadonlyArray<number>;
}

export interface VerdictDetail {
  readonly verdict: FabricVerdict;
  /** Why, in one sentence, with both numbers. */
  readonly reason: string;
  readonly measuredGbps: number | null;
  readonly requiredGbps: number;
  /** measured − required (negative when below); null when invalid. */
  readonly marginGbps: number | null;
}

function invalid(reason: string, measuredGbps: number | null, requiredGbps: number): VerdictDetail {
  return { verdict: "invalid", reason, measuredGbps, requiredGbps, marginGbps: null };
}

/**
 * A recorded measurement against a budget, with the reason. Invalid when the measurement is missing,
 * NaN or infinite, not positive, has zero samples (or a sample that is not a finite number), or when the
 * budget itself is not a positive number. Met when measured ≥ required.
 */
export function verdictDetail(measured: number | FabricMeasurement | null | undefined, budget: Pick<FabricBudget, "requiredGbps">): VerdictDetail {
  const required = budget.requiredGbps;
  const m: FabricMeasurement | null = measured === null || measured === undefined ? null : typeof measured === "number" ? { gbps: measured, samples: 1 } : measured;
  const gbps = m?.gbps ?? null;
  const shown = typeof gbps === "number" && Number.isFinite(gbps) ? gbps : null;
  if (!(typeof required === "number" && Number.isFinite(required) && required > 0)) {
    return invalid(`the budget is ${JSON.stringify(required)} Gbit/s, not a positive number; recompute the budget`, shown, required);
  }
  if (m === null || gbps === null) return invalid("no measurement was recorded", null, required);
  if (typeof gbps !== "number" || Number.isNaN(gbps)) return invalid(`the measurement is not a number (${String(gbps)})`, null, required);
  if (!Number.isFinite(gbps)) return invalid(`the measurement is ${gbps} Gbit/s, not finite`, null, required);
  const samples = m.samples;
  const count = typeof samples === "number" ? samples : samples.length;
  if (!(Number.isSafeInteger(count) && count > 0)) return invalid(`the measurement has ${count} samples`, gbps, required);
  if (typeof samples !== "number" && samples.some((s) => typeof s !== "number" || !Number.isFinite(s))) {
    return invalid("a sample of the measurement is not a finite number", gbps, required);
  }
  if (gbps <= 0) return invalid(`the measurement is ${gbps} Gbit/s; a working link measures above 0`, gbps, required);
  const margin = gbps - required;
  return gbps >= required
    ? { verdict: "met", reason: `measured ${gbps} Gbit/s meets the required ${required} Gbit/s`, measuredGbps: gbps, requiredGbps: required, marginGbps: margin }
    : { verdict: "below", reason: `measured ${gbps} Gbit/s is below the required ${required} Gbit/s`, measuredGbps: gbps, requiredGbps: required, marginGbps: margin };
}

/** "met" | "below" | "invalid": see {@link verdictDetail}. Never measures anything. */
export function verdict(measured: number | FabricMeasurement | null | undefined, budget: Pick<FabricBudget, "requiredGbps">): FabricVerdict {
  return verdictDetail(measured, budget).verdict;
}
