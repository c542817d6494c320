import type { EngineEvent, PreviewOptions, Stack, StepEventMetadata, UpOptions } from "@pulumi/pulumi/automation";

/** One planned step as the engine announces it: the resource's name, the operation and why. */
export interface PlannedStep {
  name: string;
  type: string;
  op: string;
  keys: string[];
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
  steps.set(name, { name, type: m.type, op: m.op, keys: [...(m.keys ?? [])].sort() });
}

/** Runs a real `pulumi preview` and returns every step that is not `same`, keyed by resource name. */
export async function plannedChanges(stack: Stack, opts: PreviewOptions = {}): Promise<Map<string, PlannedStep>> {
  const steps = new Map<string, PlannedStep>();
  await stack.preview({ ...opts, onEvent: (e: EngineEvent) => collect(steps, e.resourcePreEvent?.metadata) });
  return steps;
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
