/**
 * The simulated engine core: runs one sequence from admission to its last token, through the scheduler
 * (latency model), the NIXL connector (handoffs) and the metrics. HTTP concerns live in server.ts.
 */
import type { EngineArgs } from "./args";
import type { LatencyCoefficients, SimConfig } from "./config";
import { Generator, type SamplingOptions, type Token } from "./generation";
import type { CacheGeometry } from "./geometry";
import { now } from "./latency";
import { apiServer, engineCore } from "./log";
import type { ModelInfo } from "./model";
import { KvLoadError, type KvTransferParams, type NixlConnector } from "./nixl";
import type { Platform } from "./platform";
import { AbortedError, type Scheduler, Seq } from "./scheduler";
import type { Tokenizer } from "./tokenizer";
import type { EngineMetrics } from "./vllm-metrics";

/** Raised for new work once the engine is marked dead (vLLM's EngineDeadError). */
export class EngineDeadError extends Error {
  readonly code = "ENGINE_DEAD";
  constructor() {
    super("EngineCore encountered an issue. See stack trace (above) for the root cause.");
  }
}

export interface Job {
  requestId: string;
  promptIds: number[];
  maxTokens: number;
  sampling: SamplingOptions;
  /** The request's kv_transfer_params; ignored unless a KV connector is configured. */
  kvTransferParams: Record<string, unknown> | null;
  /** Called for every token as it is produced (streaming). */
  onToken?: (token: Token) => void;
  signal?: AbortSignal;
}

export interface JobResult {
  tokens: Token[];
  /** "stop" when the model emitted EOS (the EOS token counts in usage but has no text); "abort" when refused in shutdown. */
  finishReason: "length" | "stop" | "abort";
  completionTokens: number;
  kvTransferParams: KvTransferParams | null;
}

export interface EngineParts {
  args: EngineArgs;
  sim: SimConfig;
  model: ModelInfo;
  tokenizer: Tokenizer;
  geometry: CacheGeometry;
  platform: Platform;
  coefficients: LatencyCoefficients;
  maxNumSeqs: number;
  scheduler: Scheduler;
  nixl: NixlConnector | null;
  metrics: EngineMetrics;
  servedModelNames: string[];
  processStartS: number;
}

export class Engine {
  dead = false;
  /** Set by a draining SIGTERM: EngineCore answers every new request as aborted (_reject_add_in_shutdown). */
  shuttingDown = false;
  /** Generation requests in flight, reported by /load when --enable-server-load-tracking is set. */
  serverLoad = 0;

  constructor(readonly parts: EngineParts) {}

  toggleDead(dead = !this.dead): boolean {
    this.dead = dead;
    apiServer.warn("v1/engine/core_client.py:562", dead ? "Engine core marked dead (simulated EngineDeadError); /health now returns 503." : "Engine core marked alive again (simulator only).");
    return dead;
  }

  async run(job: Job): Promise<JobResult> {
    if (this.dead) throw new EngineDeadError();
    // Like any aborted request, counted in no per-request metric (load-trial-facts.md, "Aborts").
    if (this.shuttingDown) return { tokens: [], finishReason: "abort", completionTokens: 0, kvTransferParams: null };
    const { scheduler, nixl, metrics, tokenizer, args } = this.parts;
    const seq = new Seq(job.requestId, job.promptIds.length, job.maxTokens);
    const generator = new Generator(tokenizer, job.promptIds, job.sampling, Math.floor(Math.random() * 2 ** 31));
    const arrival = now();
    const tokens: Token[] = [];
    // Assigned inside emit(); the cast stops TypeScript narrowing it to "length" at the use sites.
    let finishReason = "length" as JobResult["finishReason"];
    let firstTokenAt = 0;
    let lastTokenAt = 0;
    const onAbort = () => scheduler.abort(seq);
    job.signal?.addEventListener("abort", onAbort);
    if (job.signal?.aborted) onAbort();

    // Produces output position i; true when the sequence is finished.
    const emit = (i: number): boolean => {
      if (seq.aborted) return true;
      const t = now();
      if (i === 0) {
        firstTokenAt = t;
        metrics.ttft.observe((t - arrival) / 1000);
      } else {
        metrics.itl.observe((t - lastTokenAt) / 1000);
      }
      lastTokenAt = t;
      const token = generator.tokenAt(i);
      if (token === null) {
        finishReason = "stop";
        return true;
      }
      tokens.push(token);
      job.onToken?.(token);
      return tokens.length >= job.maxTokens;
    };

    const kv = nixl ? job.kvTransferParams : null;
    let keepTokens = 0;
    let handoff: KvTransferParams | null = null;
    try {
      await scheduler.admit(seq);
      let pulled = false;
      if (kv?.do_remote_prefill === true && nixl) {
        scheduler.awaitingRemote(seq);
        try {
          const stats = await nixl.pull(kv);
          metrics.nixlXferTime.observe(stats.seconds);
          metrics.nixlBytes.observe(stats.bytes);
          pulled = true;
        } catch (err) {
          if (!(err instanceof KvLoadError)) throw err;
          nixl.logFailure(err, job.requestId, kv);
          metrics.nixlFailed.inc();
          if (args.kvTransferConfig?.kvLoadFailurePolicy !== "recompute") throw err;
          engineCore.warn("v1/core/sched/scheduler.py:1402", `Recomputing request ${job.requestId} locally after a failed KV load (kv_load_failure_policy=recompute).`);
        }
      }
      if (seq.aborted) throw new AbortedError(seq.id);
      // After a pull, D still runs the last prompt token through the model: that step yields token 0.
      let done = false;
      if (!pulled) {
        await scheduler.prefill(seq);
        done = emit(0);
      }
      if (!done) await scheduler.decode(seq, () => emit(seq.generated - 1));
      if (seq.aborted) throw new AbortedError(seq.id);
      if (kv?.do_remote_decode === true && nixl && finishReason === "length") keepTokens = seq.promptTokens;
    } finally {
      job.signal?.removeEventListener("abort", onAbort);
      const kept = scheduler.finish(seq, keepTokens);
      if (keepTokens > 0 && nixl) handoff = nixl.hold(job.requestId, kept, seq.promptTokens);
    }
    const completionTokens = tokens.length + (finishReason === "stop" ? 1 : 0);
    metrics.e2e.observe((now() - arrival) / 1000);
    if (tokens.length > 1) metrics.tpot.observe((lastTokenAt - firstTokenAt) / 1000 / (tokens.length - 1));
    metrics.promptTokens.inc(seq.promptTokens);
    metrics.generationTokens.inc(completionTokens);
    metrics.requestSuccess.inc(1, { finished_reason: finishReason });
    return { tokens, finishReason, completionTokens, kvTransferParams: handoff };
  }
}
