/**
 * The outputs of the stack's last successful deployment (none before its first up), read through the
 * engine's builtin `readStackOutputs`, as a StackReference reads, without registering a resource for it.
 * An `up` that fails leaves them as they were.
 */
import * as pulumi from "@pulumi/pulumi";

/** The backend did not answer: the program stops rather than take a rollout's record for empty. */
export class RecordedOutputsUnreadable extends Error {
  /** Stable code (tools/domain-errors.js ends the run with the message alone). */
  readonly code = "NARWHAL_RECORDED_OUTPUTS_UNREADABLE" as const;
  constructor(stack: string, cause: unknown) {
    super(
      `reading the last outputs of stack ${stack} failed: ${cause instanceof Error ? cause.message : String(cause)}. ` +
        "A rolling change continues from them, so nothing was touched; check that the state backend answers (PULUMI_BACKEND_URL and its credentials) and run again.",
    );
    this.name = "RecordedOutputsUnreadable";
  }
}

let read: Promise<Record<string, unknown>> | undefined;

export function recordedOutputs(): Promise<Record<string, unknown>> {
  read ??= readOutputs(`${pulumi.getOrganization()}/${pulumi.getProject()}/${pulumi.getStack()}`, (name) => pulumi.runtime.invoke("pulumi:pulumi:readStackOutputs", { name }));
  return read;
}

/**
 * How often a read is tried before the backend counts as not answering, and the pause between tries. The
 * engine reads the same checkpoint the CLI keeps rewriting during this very run, and the file backend
 * (gocloud's fileblob) rewrites each checkpoint's `.attrs` file in place, truncating it first: a read
 * that meets that write fails with `failed to load checkpoint: EOF`, and the next one succeeds.
 */
export const READ_ATTEMPTS = 5;
export const READ_RETRY_MS = 250;

/** `invoke` asks the engine for one stack's outputs. */
export async function readOutputs(stack: string, invoke: (name: string) => Promise<unknown>, retryMs = READ_RETRY_MS): Promise<Record<string, unknown>> {
  for (let attempt = 1; ; attempt++) {
    try {
      const answer = (await invoke(stack)) as { outputs?: Record<string, unknown> } | undefined;
      return answer?.outputs ?? {};
    } catch (err) {
      if (attempt >= READ_ATTEMPTS) throw new RecordedOutputsUnreadable(stack, err);
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
}
