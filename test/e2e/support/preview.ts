import type { EngineEvent, PreviewOptions, Stack } from "@pulumi/pulumi/automation";

/** One planned step as the engine announces it: the resource's name, the operation and why. */
export interface PlannedStep {
  name: string;
  type: string;
  op: string;
  keys: string[];
}

/** Runs a real `pulumi preview` and returns every step that is not `same`, keyed by resource name. */
export async function plannedChanges(stack: Stack, opts: PreviewOptions = {}): Promise<Map<string, PlannedStep>> {
  const steps = new Map<string, PlannedStep>();
  await stack.preview({
    ...opts,
    onEvent: (e: EngineEvent) => {
      const m = e.resourcePreEvent?.metadata;
      // A refresh announces every resource once more as `refresh`: only the plan after it counts.
      // A replacement is announced as `replace` plus its two halves; keep the logical step only.
      if (!m || ["same", "refresh", "create-replacement", "delete-replaced"].includes(m.op)) return;
      // Provider resources carry the stack config as their inputs, so any config edit "updates" them;
      // they hold no evidence.
      if (m.type.startsWith("pulumi:providers:")) return;
      const name = m.urn.split("::").pop()!;
      steps.set(name, { name, type: m.type, op: m.op, keys: [...(m.keys ?? [])].sort() });
    },
  });
  return steps;
}
