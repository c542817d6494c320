/**
 * The engine core's scheduling, reduced to what the latency model and the metrics need:
 *
 * - admission: at most --max-num-seqs sequences run; the rest wait (vllm:num_requests_waiting), FIFO,
 *   also waiting when the KV pool cannot hold their prompt plus max_tokens;
 * - prefill: one prefill at a time, taking prefill(n) simulated seconds, producing the first token;
 * - decode: one batch; each step takes decodeStep(resident KV tokens, requests) for the whole batch and
 *   gives every member one token. Sequences join the batch at the next step boundary.
 *
 * Prefill and decode run side by side (no chunked-prefill interference), which keeps the ground truth
 * exactly the formulas in latency.ts.
 */
import type { BlockPool } from "./block-pool";
import type { LatencyCoefficients } from "./config";
import { decodeStepSeconds, now, prefillSeconds, sleepUntil } from "./latency";

/** When the decode loop falls this far behind its deadlines, drop the debt instead of bursting tokens. */
const MAX_LAG_MS = 50;

export type SeqState = "waiting" | "remote_kv" | "prefill" | "decode" | "finished";

export class AbortedError extends Error {
  readonly code = "SEQ_ABORTED";
}

export class Seq {
  state: SeqState = "waiting";
  /** Tokens generated so far (the first comes from prefill, or from a decode step after a KV pull). */
  generated = 0;
  blocks: number[] = [];
  reservedBlocks = 0;
  aborted = false;
  /** Set by the scheduler while waiting, so abort() can reject admission. */
  rejectAdmission: ((err: Error) => void) | null = null;

  constructor(
    readonly id: string,
    readonly promptTokens: number,
    readonly maxTokens: number,
  ) {}

  get residentTokens(): number {
    return this.promptTokens + this.generated;
  }
}

interface DecodeEntry {
  seq: Seq;
  /** Called after each new token; returns true when the sequence is done (length, EOS or abort). */
  onToken: () => boolean;
  resolve: () => void;
}

export interface SchedulerOptions {
  maxNumSeqs: number;
  blockSize: number;
  pool: BlockPool;
  coefficients: LatencyCoefficients;
  timeScale: number;
}

export class Scheduler {
  private readonly waiting: Array<{ seq: Seq; admit: () => void }> = [];
  private readonly running = new Set<Seq>();
  private readonly batch = new Set<DecodeEntry>();
  private prefillTail: Promise<void> = Promise.resolve();
  private looping = false;

  constructor(private readonly o: SchedulerOptions) {}

  get pool(): BlockPool {
    return this.o.pool;
  }

  /** vllm:num_requests_running: sequences computing (prefill or decode). */
  get numRunning(): number {
    let n = 0;
    for (const s of this.running) if (s.state === "prefill" || s.state === "decode") n++;
    return n;
  }

  /** Requests admitted or waiting for admission: the work a draining shutdown waits for. */
  get unfinished(): number {
    return this.running.size + this.waiting.length;
  }

  /** vllm:num_requests_waiting: queued for admission, or waiting for remote KV (as vLLM counts them). */
  get numWaiting(): number {
    let n = this.waiting.length;
    for (const s of this.running) if (s.state === "remote_kv") n++;
    return n;
  }

  private blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.o.blockSize);
  }

  /** Resolves once the sequence holds a running slot and blocks for its prompt. */
  admit(seq: Seq): Promise<void> {
    return new Promise((resolve, reject) => {
      seq.rejectAdmission = reject;
      this.waiting.push({ seq, admit: resolve });
      this.admitWaiting();
    });
  }

  private admitWaiting(): void {
    while (this.waiting.length > 0 && this.running.size < this.o.maxNumSeqs) {
      const head = this.waiting[0];
      const need = this.blocksFor(head.seq.promptTokens + head.seq.maxTokens);
      if (!this.o.pool.canReserve(need)) return;
      this.waiting.shift();
      const seq = head.seq;
      seq.rejectAdmission = null;
      this.o.pool.reserve(need);
      seq.reservedBlocks = need;
      seq.blocks = this.o.pool.alloc(this.blocksFor(seq.promptTokens));
      seq.state = "prefill";
      this.running.add(seq);
      head.admit();
    }
  }

  /** Runs the prefill in the single prefill lane; the sequence then holds its first token. */
  prefill(seq: Seq): Promise<void> {
    const run = this.prefillTail.then(async () => {
      if (seq.aborted) throw new AbortedError(seq.id);
      seq.state = "prefill";
      const ms = prefillSeconds(this.o.coefficients, seq.promptTokens) * this.o.timeScale * 1000;
      await sleepUntil(now() + ms);
      this.grow(seq, 1);
    });
    this.prefillTail = run.catch(() => undefined);
    return run;
  }

  /** Marks a sequence as waiting for its KV to arrive from another engine. */
  awaitingRemote(seq: Seq): void {
    seq.state = "remote_kv";
  }

  /** Adds the sequence to the decode batch; resolves when onToken reports it done. */
  decode(seq: Seq, onToken: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      seq.state = "decode";
      this.batch.add({ seq, onToken, resolve });
      if (!this.looping) void this.loop();
    });
  }

  private grow(seq: Seq, tokens: number): void {
    seq.generated += tokens;
    const want = this.blocksFor(seq.residentTokens);
    if (want > seq.blocks.length) seq.blocks.push(...this.o.pool.alloc(want - seq.blocks.length));
  }

  private async loop(): Promise<void> {
    this.looping = true;
    let deadline = now();
    try {
      while (this.batch.size > 0) {
        const members = [...this.batch];
        let kvTokens = 0;
        for (const m of members) kvTokens += m.seq.residentTokens;
        const stepMs = decodeStepSeconds(this.o.coefficients, kvTokens, members.length) * this.o.timeScale * 1000;
        deadline += stepMs;
        if (now() - deadline > MAX_LAG_MS) deadline = now();
        await sleepUntil(deadline, false);
        for (const m of members) {
          if (!this.batch.has(m)) continue;
          let done = m.seq.aborted;
          if (!done) {
            this.grow(m.seq, 1);
            done = m.onToken();
          }
          if (done) {
            this.batch.delete(m);
            m.resolve();
          }
        }
      }
    } finally {
      this.looping = false;
    }
  }

  /**
   * Stops a sequence: it leaves the waiting queue (admission rejects) or the decode batch at the next
   * step. Its blocks are returned by finish().
   */
  abort(seq: Seq): void {
    seq.aborted = true;
    const i = this.waiting.findIndex((w) => w.seq === seq);
    if (i >= 0) {
      this.waiting.splice(i, 1);
      seq.rejectAdmission?.(new AbortedError(seq.id));
    }
  }

  /**
   * Releases the running slot and its blocks, except the blocks holding the first `keepTokens` tokens:
   * those stay allocated and are returned (a prefill leg holding its prompt's KV for a remote decode);
   * they must come back later through release().
   */
  finish(seq: Seq, keepTokens = 0): number[] {
    if (!this.running.delete(seq)) return [];
    seq.state = "finished";
    const kept = seq.blocks.slice(0, this.blocksFor(keepTokens));
    this.o.pool.free(seq.blocks.slice(kept.length));
    this.o.pool.unreserve(seq.reservedBlocks - kept.length);
    seq.blocks = [];
    seq.reservedBlocks = 0;
    this.admitWaiting();
    return kept;
  }

  /** Returns blocks kept by finish(seq, true). */
  release(blocks: readonly number[]): void {
    this.o.pool.free(blocks);
    this.o.pool.unreserve(blocks.length);
    this.admitWaiting();
  }
}
