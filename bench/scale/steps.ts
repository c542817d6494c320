import type { EngineEvent } from "@pulumi/pulumi/automation";

/** What one `up` or `preview` did, per resource name, from the engine's event stream. */
export interface StepTally {
  /** Resources created or replaced whose step finished: the evidence re-measured. */
  remeasured: string[];
  /** Resources updated in place (no measurement repeated). */
  updated: string[];
  /** Resources whose step failed. */
  failed: string[];
  /** Every planned step that is not `same` (a preview's plan), as `name: op`. */
  planned: string[];
}

// A refresh announces every resource once more; a replacement is announced as `replace` plus its two
// halves: only the logical step counts.
const IGNORED = new Set(["same", "refresh", "read", "create-replacement", "delete-replaced", "discard-replaced"]);
const nameOf = (urn: string) => urn.split("::").pop()!;

/** Collects the steps of one operation; pass `onEvent` to the Automation API call. */
export function tallySteps(): { onEvent: (e: EngineEvent) => void; tally: () => StepTally } {
  const planned = new Map<string, string>();
  const done = new Map<string, string>();
  const failed = new Set<string>();
  const onEvent = (e: EngineEvent) => {
    const pre = e.resourcePreEvent?.metadata;
    const out = e.resOutputsEvent?.metadata;
    const fail = e.resOpFailedEvent?.metadata;
    // Provider resources carry the stack config as inputs; they hold no evidence.
    for (const [m, into] of [[pre, planned], [out, done]] as const) {
      if (m && !IGNORED.has(m.op) && !m.type.startsWith("pulumi:providers:")) into.set(nameOf(m.urn), m.op);
    }
    if (fail && !fail.type.startsWith("pulumi:providers:")) failed.add(nameOf(fail.urn));
  };
  const names = (m: Map<string, string>, ops: string[]) => [...m].filter(([, op]) => ops.includes(op)).map(([n]) => n).sort();
  return {
    onEvent,
    tally: () => ({
      remeasured: names(done, ["create", "replace"]),
      updated: names(done, ["update"]),
      failed: [...failed].sort(),
      planned: [...planned].map(([n, op]) => `${n}: ${op}`).sort(),
    }),
  };
}

/**
 * Why an operation failed, from the Automation API's error text: the first diagnostic after `error: `
 * (the CLI's closing "update failed" says only that it did), without the progress line it shares.
 */
export function failureReason(message: string): string {
  for (const line of message.split("\n")) {
    const m = /(?:^|\s)error: (.*)$/.exec(line);
    if (m && !/^update failed\b/.test(m[1].trim())) return m[1].trim();
  }
  return message.split("\n")[0].trim();
}
