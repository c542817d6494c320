/**
 * A failed step's evidence (the runbook: "retain the failed attempt's evidence"): what the attempt ran, each
 * command's exit status, and what it read (HTTP answers, log text), shaped as a `fail` record. The providers
 * write it (dynamic-providers/failed-attempt.ts) before the error reaches the user.
 */
import { createHash } from "node:crypto";
import type { Ask } from "../engine/generation";
import type { KeptAttempt } from "../runtime/attempts";
import type { EvidenceArtifact, EvidenceCommand, EvidenceRecordFields, EvidenceSubject } from "./record";

/** The most of one capture kept: a /metrics page or a log tail says what it must in far less. */
export const CAPTURE_LIMIT_BYTES = 256 * 1024;

/** What one provider call has run and read so far; filled as it goes, recorded only if it fails. */
export interface Attempt {
  readonly startedAt: string;
  readonly commands: EvidenceCommand[];
  readonly captures: Array<{ name: string; text: string }>;
}

export function newAttempt(): Attempt {
  return { startedAt: new Date().toISOString(), commands: [], captures: [] };
}

/** A command run over SSH, as the record lists it: the digest of its script, the host's alias, its exit status. */
export function scriptCommand(script: string, host: string, exitStatus: number | null, startedAt: string): EvidenceCommand {
  const scriptSha256 = `sha256:${createHash("sha256").update(script).digest("hex")}`;
  const status = exitStatus !== null && exitStatus >= 0 && exitStatus <= 255 ? exitStatus : null;
  return { scriptSha256, host, exitStatus: status, startedAt, endedAt: new Date().toISOString() };
}

/** Keeps `text` under `name`, its tail when it is longer than the limit (the end of a log says why it stopped). */
export function capture(attempt: Attempt, name: string, text: string): void {
  const bytes = Buffer.from(text, "utf8");
  const kept = bytes.length > CAPTURE_LIMIT_BYTES ? `[first ${bytes.length - CAPTURE_LIMIT_BYTES} bytes not kept]\n${bytes.subarray(bytes.length - CAPTURE_LIMIT_BYTES).toString("utf8")}` : text;
  attempt.captures.push({ name, text: kept });
}

/** An Ask that keeps every answer (or the failure) it gets as a capture named by method and path. */
export function capturingAsk(ask: Ask, attempt: Attempt): Ask {
  return async (path, body, options) => {
    const what = `${body === undefined ? "GET" : "POST"} ${path}`;
    try {
      const reply = await ask(path, body, options);
      capture(attempt, what, `HTTP ${reply.status}\n${reply.body}`);
      return reply;
    } catch (err) {
      capture(attempt, what, `no answer: ${(err as Error).message}`);
      throw err;
    }
  };
}

/** The exit status an error carries (a remote command's), or null when the step did not end with one. */
export function exitStatusOf(err: unknown): number | null {
  const status = (err as { exitStatus?: unknown }).exitStatus;
  return typeof status === "number" ? status : null;
}

export interface FailedStep {
  /** Without a stack the provider keeps no evidence at all (a resource built outside a fleet). */
  stack: string | undefined;
  secrets: ReadonlyArray<string | undefined>;
  kind: string;
  subject: EvidenceSubject;
  inputs: Record<string, unknown>;
  /** Whatever else the step knew when it failed (the starting state, a partial observation). */
  observations?: Record<string, unknown>;
}

/** The message's lines as the record's reasons (a reason is one line). */
function reasonsOf(error: Error): string[] {
  const lines = error.message.split("\n").map((l) => l.replace(/\p{Cc}/gu, " ").trim().slice(0, 4096)).filter(Boolean);
  return lines.length ? lines : ["the step failed without a message"];
}

/** The `fail` record of a step that threw `error`, its captures written as `artifacts`. */
export function failureRecord(error: Error, step: FailedStep, attempt: Attempt, artifacts: EvidenceArtifact[]): Omit<EvidenceRecordFields, "stack" | "sourceRevision"> {
  const code = (error as { code?: unknown }).code;
  return {
    kind: step.kind,
    subject: step.subject,
    inputs: step.inputs as never,
    commands: attempt.commands,
    startedAt: attempt.startedAt,
    endedAt: new Date().toISOString(),
    observations: { ...(step.observations ?? {}), error: { ...(typeof code === "string" ? { code } : {}), message: error.message, exitStatus: exitStatusOf(error) } },
    verdict: { status: "fail", reasons: reasonsOf(error) },
    artifacts,
  };
}

/** A failed attempt a remote step kept on its host, as a later record lists it (verdict `fail`, its log an artifact). */
export interface ListedAttempt {
  id: string;
  verdict: "fail";
  reason: string;
  exitStatus: number | null;
  startedAt: string;
  endedAt: string;
  command: string;
  /** The artifact holding the attempt's log tail. */
  log: string;
}

/** A kept attempt's entry, its log tail written as the artifact at `log`. */
export function listedAttempt(a: KeptAttempt, log: string): ListedAttempt {
  return { id: a.id, verdict: "fail", reason: a.reason || "no reason was kept", exitStatus: a.exitStatus, startedAt: a.startedAt, endedAt: a.endedAt, command: a.command, log };
}
