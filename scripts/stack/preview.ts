import type { EngineEvent, Stack } from "@pulumi/pulumi/automation";
import { summarise, type InvalidationSummary } from "../../lib/report/summary";
import { openStack } from "./select";

export interface InvalidationOptions {
  /** Refresh first, so what changed on the hosts (a restarted engine, a moved route) shows as well. */
  refresh?: boolean;
}

/**
 * Runs a real `pulumi preview` of a stack (by name, or an Automation API stack) and returns its
 * invalidation report (lib/report): what will be re-measured, re-judged and kept, by gate. Nothing is changed.
 */
export async function invalidationSummary(stack: string | Stack, opts: InvalidationOptions = {}): Promise<InvalidationSummary> {
  const s = typeof stack === "string" ? await openStack(stack) : stack;
  const events: EngineEvent[] = [];
  await s.preview({ refresh: opts.refresh ?? false, onEvent: (e) => void (e.resourcePreEvent && events.push(e)), onOutput: () => undefined });
  return summarise(s.name, events);
}
