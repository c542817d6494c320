/**
 * The stack's outputs, read through the Automation API with the project's own CLI: their evidence
 * pointers say which records the stack holds now. Reading them needs only the local state backend.
 */
import * as path from "node:path";
import { LocalWorkspace, PulumiCommand } from "@pulumi/pulumi/automation";

const PROJECT_ROOT = path.resolve(__dirname, "..", "..", "..");

export async function stackOutputs(name: string): Promise<Record<string, unknown>> {
  const cli = await PulumiCommand.get({ root: path.join(PROJECT_ROOT, ".tools"), skipVersionCheck: false });
  const stack = await LocalWorkspace.selectStack({ stackName: name, workDir: PROJECT_ROOT }, { pulumiCommand: cli });
  return stack.outputs();
}
