/**
 * What one streamed completion's events say, timed as their bytes arrived, under `vllm bench serve`'s
 * definitions: the first token is the first event whose `choices` is non-empty (its text may be empty),
 * the end is the last such event (the usage chunk and `[DONE]` excluded), and the gaps between successive
 * choice-bearing events are the ITL pieces. Stricter than vllm bench: an `{error}` event on a 200 stream, a
 * stream without a choice, a malformed event and a stream cut before `[DONE]` are failures.
 */
import type { SseEvent } from "../profiling/sse";
import type { RequestRecord } from "./types";

type Outcome = Pick<RequestRecord, "firstTokenS" | "endS" | "chunkGapsS" | "usage" | "finishReason" | "status" | "error">;

interface Chunk {
  choices?: unknown;
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } | null;
  error?: unknown;
}

export class StreamRecorder {
  private first?: number;
  private last?: number;
  private readonly gaps: number[] = [];
  private usage?: { promptTokens: number; completionTokens: number };
  private finish?: string;
  private failure?: { at: number; error: string };
  private done = false;

  /** One event, with the monotonic time (seconds from the point's start) its bytes arrived. */
  event(e: SseEvent, at: number): void {
    if (e.done) {
      this.done = true;
      return;
    }
    if ("malformed" in e) return this.fail(at, `malformed stream event: ${e.malformed}`);
    const chunk = (e.data ?? {}) as Chunk;
    if (chunk.error !== undefined && chunk.error !== null) return this.fail(at, `error event mid-stream: ${errorText(chunk.error)}`);
    if (Array.isArray(chunk.choices) && chunk.choices.length > 0) {
      if (this.last === undefined) this.first = at;
      else this.gaps.push(at - this.last);
      this.last = at;
      const reason = (chunk.choices[0] as { finish_reason?: unknown }).finish_reason;
      if (typeof reason === "string") this.finish = reason;
    }
    const u = chunk.usage;
    if (u && typeof u.completion_tokens === "number" && typeof u.prompt_tokens === "number") {
      this.usage = { promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens };
    }
  }

  /** Marks the request failed at `at`; the first failure is the one kept. */
  fail(at: number, error: string): void {
    this.failure ??= { at, error };
  }

  /** The record's outcome once the body has ended (at `at`) or the request stopped on a failure. */
  outcome(at: number): Outcome {
    if (!this.failure && this.first === undefined) this.fail(at, "the stream ended without a chunk carrying a choice");
    if (!this.failure && !this.done) this.fail(at, "the stream ended before its [DONE] event");
    const seen = { firstTokenS: this.first, chunkGapsS: this.gaps, usage: this.usage, finishReason: this.finish };
    if (this.failure) return { ...seen, endS: this.failure.at, status: "error", error: this.failure.error };
    return { ...seen, endS: this.last ?? at, status: "ok" };
  }
}

function errorText(error: unknown): string {
  if (typeof error === "string") return error.slice(0, 200);
  const m = (error as { message?: unknown }).message;
  return (typeof m === "string" ? m : JSON.stringify(error)).slice(0, 200);
}
