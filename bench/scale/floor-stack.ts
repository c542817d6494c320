import * as fs from "node:fs";
import * as path from "node:path";
import { LocalWorkspace, type PulumiCommand, type Stack } from "@pulumi/pulumi/automation";

export const FLOOR_DIR = path.join(__dirname, "..", "floor");

/** The floor program's stack (bench/floor), set to create `resources` do-nothing resources. */
export async function openFloorStack(name: string, cli: PulumiCommand, resources: number): Promise<Stack> {
  const stack = await LocalWorkspace.createOrSelectStack({ stackName: name, workDir: FLOOR_DIR }, { pulumiCommand: cli });
  await stack.setConfig("narwhal-scale-floor:resources", { value: String(resources) });
  return stack;
}

/** Resources in a stack's state, the Stack resource and providers included. */
export async function stateResourceCount(stack: Stack): Promise<number> {
  const exported = await stack.exportStack();
  return ((exported.deployment as { resources?: unknown[] }).resources ?? []).length;
}

/** A `file://` backend's folder must exist before the CLI opens it (setup makes it in a full checkout). */
export function ensureFileBackend(): void {
  const url = process.env.PULUMI_BACKEND_URL ?? "";
  if (url.startsWith("file://")) fs.mkdirSync(url.slice("file://".length), { recursive: true });
}
