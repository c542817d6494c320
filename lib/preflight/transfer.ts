/**
 * produce and consume verdicts. Every probe keeps its own record (pair, repeat, first-token time,
 * tokens, error, the two engines' recent logs when it failed); a pair passes only if every repeat did.
 */
import type { Pair, Probe } from "./pairs";
import type { Engine } from "./judge";
import type { Report } from "./types";

export type ProduceObservation = { readonly parameters: readonly string[] } | { readonly error: string };

/** produce: every live engine exports a KV handoff. Returns the engines that did. */
export function judgeProduce(engines: readonly Engine[], live: ReadonlySet<string>, observed: ReadonlyMap<string, ProduceObservation>, rep: Report): Set<string> {
  const produced = new Set<string>();
  for (const e of engines) {
    if (!live.has(e.iid)) {
      rep.skip("produce", `${e.iid} produce: unreachable`);
      continue;
    }
    const o = observed.get(e.iid);
    if (!o || "error" in o) rep.fail("produce", `${e.iid} prefill leg: ${o && "error" in o ? o.error : "not observed"}`);
    else {
      produced.add(e.iid);
      rep.ok("produce", `${e.iid} returned handoff parameters (${[...o.parameters].sort().join(", ")})`);
    }
  }
  return produced;
}

export type FailureKind = "deadline_exceeded" | "transfer_failed" | "request_deadline_exceeded" | "no_tokens";

export interface TransferRecord extends Probe {
  readonly status: "passed" | "failed";
  readonly firstTokenSeconds: number | null;
  readonly tokens: number;
  readonly failureKind?: FailureKind;
  readonly error?: string;
  /** The tail of each engine's log at the failure, or what was available instead. */
  readonly logs?: { readonly producer: string; readonly consumer: string };
}

export function transferMessage(r: TransferRecord, firstTokenTimeoutS: number, requestTimeoutS: number): string {
  const path = `${r.producer} -> ${r.consumer}`;
  switch (r.failureKind) {
    case "deadline_exceeded":
      return `${path}: first-token deadline ${firstTokenTimeoutS}s expired; transfer remains unconfirmed. Run first-token calibration.`;
    case "request_deadline_exceeded":
      return `${path}: request deadline ${requestTimeoutS}s expired; transfer remains unconfirmed`;
    case "no_tokens":
      return `${path} accepted the handoff and produced no tokens`;
    default:
      return `${path}: ${r.error ?? "failed"}`;
  }
}

/** consume: every tested pair moved KV and streamed output; the first pass of a pair is reported once, every failure each time. */
export function judgeConsume(
  pairs: readonly Pair[],
  records: readonly TransferRecord[],
  excludedByPins: readonly string[],
  timeouts: { firstTokenS: number; requestS: number },
  rep: Report,
): void {
  if (excludedByPins.length) rep.ok("consume", `pairs excluded by role pins: ${excludedByPins.join(", ")} (never cross in production)`);
  if (!pairs.length) return;
  const seen = new Set<string>();
  for (const r of records) {
    if (r.status === "failed") {
      rep.fail("consume", transferMessage(r, timeouts.firstTokenS, timeouts.requestS));
      continue;
    }
    const key = `${r.producer}\u0000${r.consumer}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const timing = r.firstTokenSeconds !== null ? `, first token ${r.firstTokenSeconds.toFixed(3)}s` : "";
    rep.ok("consume", `${r.producer} -> ${r.consumer} moved KV and produced ${r.tokens} tokens${timing}`);
  }
}
