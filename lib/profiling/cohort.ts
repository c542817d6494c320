/**
 * Book-keeping of one decode cohort, as narwhal's `_one_decode_stream` keeps it: every stream adds its
 * input length to the resident KV tokens when its first token arrives, each further token adds one, and
 * an interval between two single-token chunks of a stream counts only while the whole cohort is in
 * decode and no stream joined or left in between (the epoch did not move).
 */
import { ProfileError } from "./errors";

/** One interval: active requests, resident KV tokens, seconds since the stream's previous token. */
export type Interval = [requests: number, kvTokens: number, seconds: number];

export class Cohort {
  resident = 0;
  requests = 0;
  epoch = 0;
  joined = 0;
  firstAt: number | undefined;
  lastJoinAt: number | undefined;
  leftAt: number | undefined;
  readonly intervals: Interval[] = [];

  constructor(
    readonly size: number,
    readonly inputTokens: number,
    readonly tokens: number,
  ) {}

  stream(): CohortStream {
    return new CohortStream(this);
  }
}

/** One stream of a cohort; feed it each chunk's token count (and finish reason) with its arrival time (s). */
export class CohortStream {
  private mine = 0;
  private last: number | undefined;
  private lastEpoch = -1;
  private finished = false;

  constructor(private readonly c: Cohort) {}

  chunk(ids: number, finishReason: string | null, now: number): void {
    const c = this.c;
    if (finishReason !== null) {
      if (finishReason !== "length") throw new ProfileError("NARWHAL_PROFILE_PROBE", "decode probe stopped before its forced token limit");
      if (this.finished || this.mine + ids !== c.tokens) throw new ProfileError("NARWHAL_PROFILE_PROBE", "decode probe has an invalid terminal token count");
      this.finished = true;
    }
    if (!ids) return;
    if (this.mine + ids > c.tokens) throw new ProfileError("NARWHAL_PROFILE_PROBE", "decode probe exceeded its forced token limit");
    if (this.mine === 0) {
      c.resident += c.inputTokens;
      c.requests += 1;
      c.epoch += 1;
      c.joined += 1;
      c.firstAt ??= now;
      if (c.joined === c.size) c.lastJoinAt = now;
    }
    this.mine += ids;
    c.resident += ids;
    if (ids === 1 && this.last !== undefined && this.lastEpoch === c.epoch && c.requests === c.size && now > this.last) {
      c.intervals.push([c.requests, c.resident, now - this.last]);
    }
    // A chunk of several tokens hides their spacing: the gaps next to it are not used.
    this.last = ids === 1 ? now : undefined;
    this.lastEpoch = c.epoch;
  }

  /** The stream ended (normally or not): it leaves the cohort. */
  end(now: number, done: boolean): void {
    const c = this.c;
    if (this.mine) {
      c.leftAt ??= now;
      c.resident -= c.inputTokens + this.mine;
      c.requests -= 1;
      c.epoch += 1;
    }
    if (done && (!this.finished || this.mine !== c.tokens)) {
      throw new ProfileError("NARWHAL_PROFILE_PROBE", `decode probe incomplete: tokens=${this.mine}/${c.tokens}, finished=${this.finished}`);
    }
  }
}

/**
 * narwhal's `_overlapping_tokens`: when streams finished before the last one joined, the tokens per
 * stream that make them overlap (stretching by the share of the run spent joining), or undefined when
 * that does not fit the context left after the input.
 */
export function overlappingTokens(c: Cohort, limit: number | undefined): number | undefined {
  const { firstAt, lastJoinAt, leftAt } = c;
  if (firstAt === undefined || lastJoinAt === undefined || leftAt === undefined || lastJoinAt < leftAt || leftAt <= firstAt) return undefined;
  const sized = c.tokens + Math.ceil((c.tokens * (lastJoinAt - firstAt)) / (leftAt - firstAt));
  return limit !== undefined && sized > limit ? undefined : sized;
}
