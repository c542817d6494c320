/**
 * The stack's outputs, read through the Automation API with the project's own CLI: their evidence
 * pointers say which records the stack holds now. Reading them needs only the local state backend.
 */
import { openStack } from "./select";

export async function stackOutputs(name: string): Promise<Record<string, unknown>> {
  return (await openStack(name)).outputs();
}
