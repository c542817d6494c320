/**
 * One line of an engine's check log (`image-check/logs/<engine>.jsonl` in the evidence store), the
 * runbook's image-check.log / runtime-check.log: each inspection's unique id, the launch-plan hash, and
 * every step's command and output, passed or failed. Lines are only ever appended.
 */
import { canonicalJson } from "../digest";
import type { CheckFailure } from "./verdict";

export interface CheckLogStep {
  readonly name: string;
  /** The argv as run, with the check script replaced by its digest. */
  readonly argv: ReadonlyArray<string>;
  readonly scriptSha256?: string;
  readonly exitStatus: number | null;
  readonly startedAt: string;
  readonly endedAt: string;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CheckLogEntry {
  readonly checkId: string;
  readonly engineId: string;
  readonly hostAlias: string;
  readonly planSha256: string;
  /** "native" or "docker". */
  readonly runtime: string;
  readonly startedAt: string;
  readonly endedAt: string;
  readonly steps: ReadonlyArray<CheckLogStep>;
  readonly verdict: { readonly status: "pass" | "fail"; readonly failures: ReadonlyArray<CheckFailure> };
}

/** Per engine, so a replaced engine's checks read in order in one file. */
export function checkLogName(engineId: string): string {
  return `${engineId}.jsonl`;
}

/** One JSON object per line, keys sorted, ending in a newline. */
export function checkLogLine(entry: CheckLogEntry): string {
  return `${canonicalJson(entry)}\n`;
}

/** The lines of a log file, parsed; a line that is not JSON is reported by its number. */
export function parseCheckLog(text: string): CheckLogEntry[] {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l, i) => {
      try {
        return JSON.parse(l) as CheckLogEntry;
      } catch {
        throw new Error(`check log line ${i + 1} is not JSON`);
      }
    });
}

