import { expect } from "chai";
import type { EngineEvent, PreviewOptions, Stack, StepEventMetadata, UpOptions } from "@pulumi/pulumi/automation";
import { summarise, type InvalidationSummary } from "../../../lib/report/summary";

/** One planned step as the engine announces it: the resource's name, the operation and why. */
export interface PlannedStep {
  name: string;
  type: string;
  op: string;
  keys: string[];
  /** The inputs that changed (an update names no replacing keys): kept for a failure's message. */
  diffs?: string[];
  /** What the refresh before it saw, for a resource that probes (lib/liveness.ts): why it is restarted. */
  observed?: string;
}

/** Adds one step an event announces, unless it changes nothing or only restates another step. */
function collect(steps: Map<string, PlannedStep>, m: StepEventMetadata | undefined): void {
  // A refresh announces every resource once more as `refresh`: only the plan after it counts.
  // A replacement is announced as `replace` plus its two halves; keep the logical step only.
  if (!m || ["same", "refresh", "create-replacement", "delete-replaced"].includes(m.op)) return;
  // Provider resources carry the stack config as their inputs, so any config edit "updates" them;
  // they hold no evidence.
  if (m.type.startsWith("pulumi:providers:")) return;
  const name = m.urn.split("::").pop()!;
  // The state a step starts from is the refreshed one: what a probe saw there is why it restarts.
  const observed = (m.old?.outputs as { observedDetail?: unknown } | undefined)?.observedDetail;
  steps.set(name, { name, type: m.type, op: m.op, keys: [...(m.keys ?? [])].sort(), ...(m.op === "update" && m.diffs?.length ? { diffs: [...m.diffs].sort() } : {}), ...(typeof observed === "string" ? { observed } : {}) });
}

/** Runs a real `pulumi preview` and returns every step that is not `same`, keyed by resource name. */
export async function plannedChanges(stack: Stack, opts: PreviewOptions = {}): Promise<Map<string, PlannedStep>> {
  const steps = new Map<string, PlannedStep>();
  await stack.preview({ ...opts, onEvent: (e: EngineEvent) => collect(steps, e.resourcePreEvent?.metadata) });
  return steps;
}

/** One real, quiet `pulumi preview`: its steps as plannedChanges gives them, and every event to `also`. */
async function previewReading(stack: Stack, opts: PreviewOptions, also: (e: EngineEvent) => void): Promise<Map<string, PlannedStep>> {
  const steps = new Map<string, PlannedStep>();
  await stack.preview({
    ...opts,
    onOutput: () => undefined,
    onEvent: (e: EngineEvent) => {
      collect(steps, e.resourcePreEvent?.metadata);
      also(e);
    },
  });
  return steps;
}

/** One real `pulumi preview`: its steps as plannedChanges gives them, and the messages the program logged. */
export async function plannedWithLog(stack: Stack, opts: PreviewOptions = {}): Promise<{ steps: Map<string, PlannedStep>; log: string[] }> {
  const log: string[] = [];
  const steps = await previewReading(stack, opts, (e) => e.diagnosticEvent && log.push(e.diagnosticEvent.message.trim()));
  return { steps, log };
}

/**
 * One real `pulumi preview`, read twice: its steps as plannedChanges gives them, and the invalidation report
 * `npm run invalidated` prints of the same events (a refreshing preview costs each engine's probe once).
 */
export async function plannedWithSummary(stack: Stack, opts: PreviewOptions = {}): Promise<{ steps: Map<string, PlannedStep>; summary: InvalidationSummary }> {
  const events: EngineEvent[] = [];
  const steps = await previewReading(stack, opts, (e) => e.resourcePreEvent && events.push(e));
  return { steps, summary: summarise(stack.name, events) };
}

/** One line per step: name, operation, replace keys, and what a probe saw, for an assertion's message. */
export function describeSteps(steps: ReadonlyMap<string, PlannedStep>): string {
  return [...steps.values()].map((s) => `${s.name} ${s.op}${s.keys.length ? ` [${s.keys.join(", ")}]` : ""}${s.diffs ? ` (changed: ${s.diffs.join(", ")})` : ""}${s.observed ? `: ${s.observed}` : ""}`).join("\n");
}

/** Runs a real `pulumi preview` and asserts it plans nothing, naming each step it did plan and why. */
export async function expectNothingPlanned(stack: Stack, opts: PreviewOptions = {}, what = "the preview plans nothing"): Promise<void> {
  const steps = await plannedChanges(stack, opts);
  expect([...steps.keys()], `${what}; it planned:\n${describeSteps(steps)}`).to.deep.equal([]);
}

/**
 * Runs a real `pulumi up` and returns every step it finished that is not `same`, in the form
 * plannedChanges gives, so a test can hold what an `up` did against what the preview before it forecast.
 */
export async function appliedChanges(stack: Stack, opts: UpOptions = {}): Promise<Map<string, PlannedStep>> {
  const steps = new Map<string, PlannedStep>();
  await stack.up({ onOutput: () => undefined, ...opts, onEvent: (e: EngineEvent) => collect(steps, e.resOutputsEvent?.metadata) });
  return steps;
}

/** `<resource name> <op>` per step, sorted: the part of a plan an `up` must match. */
export const stepList = (steps: ReadonlyMap<string, PlannedStep>): string[] => [...steps.values()].map((s) => `${s.name} ${s.op}`).sort();
