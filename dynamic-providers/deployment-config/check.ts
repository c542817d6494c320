/** DeploymentConfig inputs: each file name becomes a file of the evidence store. */
import { z } from "zod";
import { stackName } from "../../lib/provider-fields";
import type { EvidenceRef } from "../../lib/evidence/provider-evidence";

/** A plain file name: no folder, no hidden or parent name. */
const FILE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

export const deploymentConfigInputs = z.object({
  stack: stackName(),
  /** File name -> contents, as the runbook's Gate A writes them under config/. */
  files: z.custom<Record<string, string>>().superRefine((files, ctx) => {
    if (typeof files !== "object" || files === null || Array.isArray(files)) {
      ctx.addIssue({ code: "custom", message: `files must map file names to their text, got ${JSON.stringify(files)}` });
      return;
    }
    for (const [name, text] of Object.entries(files)) {
      if (!FILE_NAME.test(name)) ctx.addIssue({ code: "custom", message: `files: ${JSON.stringify(name)} is not a plain file name (letters, digits, "_", "-", "." and no folder)` });
      else if (typeof text !== "string") ctx.addIssue({ code: "custom", message: `files[${JSON.stringify(name)}] must be text` });
    }
  }),
});

export type DeploymentConfigInputs = z.infer<typeof deploymentConfigInputs>;

export interface DeploymentConfigOutputs {
  stack: string;
  /** Digest of every file's contents: what later gates record as "deployed with this config". */
  configDigest: string;
  /** Each file as written to the evidence store. */
  written: Record<string, { relativePath: string; sha256: string; bytes: number }>;
  record: EvidenceRef;
}
