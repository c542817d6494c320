/**
 * What the preflight provider makes of a run: who its failed lines are about, the verdict its record
 * keeps, and what an engine's prefill reply must carry before the decode leg (narwhal's own checks).
 */
import { stopsDeployment, type GateNote, type RunStatus } from "./status";
import { failedGates, type GateResult } from "./types";

/** Who a failed line is about: an engine id or a `producer -> consumer` pair at its start. */
export function failureSummary(results: readonly GateResult[]): string {
  return failedGates(results)
    .map((g) => {
      const subjects = [...new Set(g.lines.filter((l) => l.status === "fail").map((l) => /^(\S+(?: -> \S+?)?):?\s/.exec(l.message)?.[1] ?? l.message))];
      return `${g.gate} (${subjects.join(", ")})`;
    })
    .join("; ");
}

/** Every failed line of every gate, as `gate: message`. */
export const failedLines = (results: readonly GateResult[]): string[] =>
  failedGates(results).flatMap((g) => g.lines.filter((l) => l.status === "fail").map((l) => `${g.gate}: ${l.message}`));

/** The record's verdict: a degraded run keeps its skips as the reasons; it fails only when the stack asked for strict. */
export function preflightVerdict(gates: readonly GateResult[], status: RunStatus, skipped: readonly GateNote[], strict: boolean): { status: "pass" | "fail"; reasons: string[] } {
  const skips = skipped.map((s) => `${s.gate} skipped: ${s.message}`);
  if (!stopsDeployment(status, strict)) return { status: "pass", reasons: skips };
  return { status: "fail", reasons: failedGates(gates).length ? failedLines(gates) : skips };
}

/** A degraded run recorded while strict was off no longer stands once strict is on: run it again (and fail if it still degrades). */
export function strictReplaces(olds: { strict?: boolean; status?: RunStatus }, news: { strict?: boolean }): boolean {
  return news.strict === true && olds.strict !== true && olds.status === "degraded";
}

/** The engines a failed line names: each id that appears in it as a word of its own. */
export function enginesNamed(message: string, engineIds: ReadonlyArray<string>): string[] {
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return engineIds.filter((id) => new RegExp(`(^|[^A-Za-z0-9._-])${escape(id)}($|[^A-Za-z0-9._-])`).test(message));
}

/** narwhal's `sse_error`: the status and message an SSE error event carries. */
export function streamError(error: unknown): string {
  if (error && typeof error === "object") {
    const e = error as { code?: unknown; message?: unknown };
    const status = Number.isInteger(e.code) && (e.code as number) >= 400 && (e.code as number) <= 599 ? e.code : 500;
    const message = typeof e.message === "string" && e.message.trim() ? e.message.trim() : JSON.stringify(error);
    return `${String(status)} ${message}`;
  }
  return `500 ${typeof error === "string" && error.trim() ? error.trim() : JSON.stringify(error)}`;
}

/** The KV handoff a prefill reply carries, checked as narwhal checks it before the decode leg. */
export function handoffOf(text: string): Record<string, unknown> {
  const payload = JSON.parse(text) as Record<string, unknown>;
  const choices = Array.isArray(payload.choices) ? payload.choices : [];
  const params = ((choices[0] as Record<string, unknown> | undefined)?.kv_transfer_params ?? payload.kv_transfer_params ?? {}) as Record<string, unknown>;
  if (!params || typeof params !== "object" || Array.isArray(params) || !Object.keys(params).length) throw new Error("the prefill response carries no kv_transfer_params");
  if (typeof params.remote_engine_id !== "string" || !params.remote_engine_id) throw new Error("handoff has no remote_engine_id");
  if (!Array.isArray(params.remote_block_ids)) throw new Error("handoff has no remote_block_ids");
  return params;
}
