/**
 * A stack of this project through the project's own pulumi CLI (`.tools`, as scripts/env.sh sets up),
 * for the scripts that read or preview a stack. Kept out of lib/, which holds no Pulumi.
 */
import * as path from "node:path";
import { LocalWorkspace, PulumiCommand, type Stack } from "@pulumi/pulumi/automation";

export const PROJECT_ROOT = path.resolve(__dirname, "..", "..");

export async function selectStack(name: string): Promise<Stack> {
  const cli = await PulumiCommand.get({ root: path.join(PROJECT_ROOT, ".tools"), skipVersionCheck: false });
  return LocalWorkspace.selectStack({ stackName: name, workDir: PROJECT_ROOT }, { pulumiCommand: cli });
}
