/**
 * The whole run's status, as narwhal-check 0.7.0 decides it (`diagnostics/check/preflight.py` `run`
 * and `command_results.EXIT_CODES`): any failed line fails the run (`failed_gate`, exit 1); otherwise any
 * skipped line, in any gate, degrades it (`degraded`, exit 3 with `--format json`); otherwise it passes
 * (`success`, exit 0). A gate whose verdict is pass can still carry a skip (the contract gate's
 * "undeclared: connector_version, transfer_version"), so the status reads lines, not verdicts. Warnings
 * are reported and change nothing.
 */
import type { GateName, GateResult } from "./types";

export type RunStatus = "pass" | "degraded" | "fail";

/** narwhal-check's `--format json` result status and exit code for the same run. */
export const NARWHAL_STATUS = {
  pass: { status: "success", exitCode: 0 },
  degraded: { status: "degraded", exitCode: 3 },
  fail: { status: "failed_gate", exitCode: 1 },
} as const satisfies Record<RunStatus, { status: string; exitCode: number }>;

export interface GateNote {
  readonly gate: GateName;
  readonly message: string;
}

export interface RunSummary {
  readonly status: RunStatus;
  /** What narwhal-check would say: its result status and exit code. */
  readonly narwhal: (typeof NARWHAL_STATUS)[RunStatus];
  /** Every skipped line with its gate (narwhal's `data.skipped`), in report order. */
  readonly skipped: GateNote[];
  /** Every warning with its gate (narwhal's `data.warnings`). */
  readonly warnings: GateNote[];
  /** Every failed line with its gate (narwhal's `data.failed`). */
  readonly failed: GateNote[];
}

export function runSummary(gates: readonly GateResult[]): RunSummary {
  const notes = (status: "skip" | "warn" | "fail") => gates.flatMap((g) => g.lines.filter((l) => l.status === status).map((l) => ({ gate: g.gate, message: l.message })));
  const failed = notes("fail");
  const skipped = notes("skip");
  const status: RunStatus = failed.length ? "fail" : skipped.length ? "degraded" : "pass";
  return { status, narwhal: NARWHAL_STATUS[status], skipped, warnings: notes("warn"), failed };
}

/**
 * Whether the run stops the `up`: a failed run always does; a degraded one only when the stack asks
 * for strict (`preflight.strict`), since narwhal-check itself passes it (its text mode exits 0).
 */
export function stopsDeployment(status: RunStatus, strict: boolean): boolean {
  return status === "fail" || (status === "degraded" && strict);
}

/** The skipped gates and why, one clause per line: `contract (contract 1a2b… undeclared: …)`. */
export function skippedSummary(skipped: readonly GateNote[]): string {
  return skipped.map((s) => `${s.gate} (${s.message})`).join("; ");
}
