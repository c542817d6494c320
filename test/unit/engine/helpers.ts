/**
 * Recorded replies of a live engine simulator (TP 2, NixlConnector, API key, served name "tiny"; model
 * path rewritten to /models/tiny) and an Ask that replays them, so lib/engine is tested without I/O.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { EngineError } from "../../../lib/engine/errors";
import type { Ask, ProofSubject, Reply } from "../../../lib/engine/generation";

export const FIXTURES = join(__dirname, "fixtures");
export const RECORDED: Readonly<Record<string, Reply>> = JSON.parse(readFileSync(join(FIXTURES, "sim-tp2-replies.json"), "utf8"));
/** A TP 2 vLLM 0.29.0 startup log, its lines as vllm-restart-facts.md §4 gives them, sized like RECORDED's /metrics. */
export const VLLM_TP2_LOG = readFileSync(join(FIXTURES, "vllm-tp2-startup.log"), "utf8");

/** process_start_time_seconds in the recorded /metrics (printed as 1.795945792993833e+09). */
export const RECORDED_START = 1795945792.993833;
export const PLAN = "sha256:" + "ab".repeat(32);

export const SUBJECT: ProofSubject = {
  engineId: "e1",
  hostAlias: "gpu-a",
  url: "http://127.0.0.1:8100",
  processIdentity: { hostAlias: "gpu-a", pid: 4242 },
};

export interface Replay {
  ask: Ask;
  calls: Array<{ path: string; body?: unknown }>;
}

/**
 * Replays the recorded replies; `overrides` replace a path's reply, or throw (an Error stands for "no
 * answer"), or give a sequence consumed one call at a time (the last one repeats).
 */
export function replay(overrides: Record<string, Reply | Error | Array<Reply | Error>> = {}): Replay {
  const calls: Replay["calls"] = [];
  const used = new Map<string, number>();
  const ask: Ask = async (path, body) => {
    calls.push(body === undefined ? { path } : { path, body });
    let r: Reply | Error | Array<Reply | Error> | undefined = overrides[path] ?? RECORDED[path];
    if (Array.isArray(r)) {
      const i = used.get(path) ?? 0;
      used.set(path, i + 1);
      r = r[Math.min(i, r.length - 1)];
    }
    if (r === undefined) return { status: 404, body: '{"detail":"Not Found"}' };
    if (r instanceof Error) throw r;
    return r;
  };
  return { ask, calls };
}

/** /metrics as recorded, with process_start_time_seconds moved to `start` (or removed when undefined). */
export function metricsWithStart(start: number | undefined): Reply {
  const body = RECORDED["/metrics"].body.replace(/^process_start_time_seconds .*\n/m, start === undefined ? "" : `process_start_time_seconds ${start}\n`);
  return { status: 200, body };
}

/** The error `fn` throws; a call that returns fails the test. */
export function thrown(fn: () => unknown): EngineError {
  try {
    fn();
  } catch (err) {
    return err as EngineError;
  }
  throw new Error("expected an error");
}
