import * as path from "node:path";
import { LocalWorkspace, PulumiCommand, type EngineEvent, type Stack } from "@pulumi/pulumi/automation";
import { summarise, type InvalidationSummary } from "./summary";

const PROJECT_ROOT = path.resolve(__dirname, "..", "..");

export interface InvalidationOptions {
  /** Refresh first, so what changed on the hosts (a restarted engine, a moved route) shows as well. */
  refresh?: boolean;
}

/** A stack of this project through the project's own CLI (the environment of scripts/env.sh). */
async function selectStack(name: string): Promise<Stack> {
  const cli = await PulumiCommand.get({ root: path.join(PROJECT_ROOT, ".tools"), skipVersionCheck: false });
  return LocalWorkspace.selectStack({ stackName: name, workDir: PROJECT_ROOT }, { pulumiCommand: cli });
}

/**
 * Runs a real `pulumi preview` of a stack (by name, or an Automation API stack) and returns its
 * invalidation report: what will be re-measured, re-judged and kept, by gate. Nothing is changed.
 */
export async function invalidationSummary(stack: string | Stack, opts: InvalidationOptions = {}): Promise<InvalidationSummary> {
  const s = typeof stack === "string" ? await selectStack(stack) : stack;
  const events: EngineEvent[] = [];
  await s.preview({ refresh: opts.refresh ?? false, onEvent: (e) => void (e.resourcePreEvent && events.push(e)), onOutput: () => undefined });
  return summarise(s.name, events);
}
