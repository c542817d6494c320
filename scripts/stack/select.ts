/**
 * A stack of this project through the project's own pulumi CLI (`.tools`, as scripts/env.sh sets up),
 * for the scripts that read or preview a stack. Kept out of lib/, which holds no Pulumi.
 *
 * The scripts name their stack with `--stack` and never select it: `LocalWorkspace.selectStack` runs
 * `pulumi stack select`, which would change the operator's current stack behind their back. Every
 * `Stack` method the scripts use (outputs, config, export, preview) passes `--stack` itself, so only
 * the selection step is replaced, by a check that the stack exists.
 */
import * as path from "node:path";
import { LocalWorkspace, PulumiCommand, Stack } from "@pulumi/pulumi/automation";

export const PROJECT_ROOT = path.resolve(__dirname, "..", "..");

/** Thrown when the named stack is not in the backend; the message says how to list the ones that are. */
export class StackNotFound extends Error {
  readonly code = "NARWHAL_STACK_NOT_FOUND";
}

/**
 * The named stack, for reading or previewing, with the workspace's selected stack left as it was.
 * @param workDir the project folder (its Pulumi.yaml); the project's own by default
 */
export async function openStack(name: string, workDir: string = PROJECT_ROOT): Promise<Stack> {
  const cli = await PulumiCommand.get({ root: path.join(PROJECT_ROOT, ".tools"), skipVersionCheck: false });
  const workspace = await LocalWorkspace.create({ workDir, pulumiCommand: cli });
  workspace.selectStack = async (stackName: string) => {
    // `pulumi stack tag ls --stack X` loads X (failing when the backend has no such stack) and selects nothing.
    try {
      await workspace.listTags(stackName);
    } catch (e) {
      const said = ((e as { commandResult?: { stderr?: string } }).commandResult?.stderr || (e as Error).message).trim();
      throw new StackNotFound(`stack ${stackName} cannot be read: ${said}; \`pulumi stack ls\` lists this project's stacks`);
    }
  };
  return Stack.select(name, workspace);
}
