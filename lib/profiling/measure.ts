/**
 * The measuring driver for one engine, narwhal-profile's `profile_instance` step by step: `/health`,
 * the live `max_model_len` from `/tokenize`, the engine's bounded sweep, a warm-up, prefill one-token
 * completions with repeats (median fitted, every timing kept), decode cohorts measured while the whole
 * cohort is in decode, and the process identity read before and after so a restart mid-sweep is caught.
 * Everything observed goes into `record` as it is taken, so a stop still leaves the raw samples.
 */
import { randomBytes } from "node:crypto";
import { classifyEngineFailure, probeOver } from "../engine/gone";
import type { EngineClient } from "./client";
import { Cohort, overlappingTokens, type Interval } from "./cohort";
import { ProfileError } from "./errors";
import { decodeCrossValidationMape, decodeMape, fitDecodePlane, fitPrefill, mean, median, pct, type DecodePlane, type DecodePoint, type PrefillFit } from "./fit";
import { metricFacts, type EngineMetricFacts } from "./metrics";
import type { ContentionGauge } from "./contention";
import { DISTURBED_LATENESS, resampleBrief, Resampler, RETAKES_PER_PHASE_SAMPLE, summarize, type ResampleSummary, type TrafficWitness } from "./resample";
import { boundedSweep, PREFILL_OUTPUT_TOKENS, sweepRecord, type Sweep } from "./sweep";
import { buildRow, type ProfileRow } from "./store";

export interface MeasureOptions {
  iid: string;
  /** The served model name every request names. */
  model: string;
  sweep: Sweep;
  /** The plan's `max_num_seqs`: decode concurrency is bounded by it. */
  maxNumSeqs?: number;
  /** The proved process start: the engine must still be that process before and after. */
  processStartTime?: number;
  /** Timeout of one probe (health, tokenize, metrics) and of one completion or cohort, seconds. */
  probeTimeoutS: number;
  requestTimeoutS: number;
  log?: (line: string) => void;
  /**
   * The contention of the host that times the requests: with it, a sample taken while that host was
   * disturbed is taken again within a bounded budget (./resample.ts); without it every sample is kept.
   */
  contention?: ContentionGauge;
  /** With the gauge: what the engine served besides each sample; a sample it shared is taken again too. */
  traffic?: TrafficWitness;
}

/** The raw record of one engine's sweep, filled as it goes (narwhal's per-engine sidecar entry, plus facts). */
export interface MeasureRecord {
  max_model_len?: number;
  sweep?: Record<string, unknown>;
  max_num_seqs?: number;
  process_start_time_seconds?: number;
  prefill: Array<[number, number]>;
  prefill_fit_points?: Array<[number, number]>;
  prefill_fit_mape?: number;
  prefill_fit_worst_point?: number;
  prefill_block_tokens?: number | null;
  decode: Array<[number, number, number]>;
  decode_intervals: Array<{ input_tokens: number; concurrency: number; repeat: number; tokens: number; intervals: Interval[] }>;
  prefix_cache_hit_tokens?: number | null;
  warm_up?: { tokens: number; seconds: number };
  /** The sweep's re-sampling (not part of narwhal's sidecar entry: evidence only). */
  resampled?: ResampleSummary;
  error?: string;
}

export interface Measurement {
  maxModelLen: number;
  sweep: Sweep;
  prefill: PrefillFit;
  decode: DecodePlane;
  decodePoints: DecodePoint[];
  decodeFitMape: number;
  decodeCvMape: number | null;
  blockTokens: number | null;
  kvCapacityTokens: number | null;
  decodeMaxOutputTokens: number;
  processStartTime: number | null;
  /** Set when the sweep was taken with a contention gauge. */
  resampled?: ResampleSummary;
}

export const emptyRecord = (): MeasureRecord => ({ prefill: [], decode: [], decode_intervals: [] });

const WORD = "benchmark ";

function parse(body: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(body) as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export class Profiler {
  /** With a gauge, each phase's re-sampling, made once the engine's bounded sweep says how many samples it keeps. */
  private phases: { prefill: Resampler; decode: Resampler } | undefined;

  constructor(
    private readonly http: EngineClient,
    private readonly o: MeasureOptions,
    readonly record: MeasureRecord = emptyRecord(),
  ) {}

  /** One sample, taken again while the timing machine was disturbed (when a gauge was given). */
  private sample<T>(phase: "prefill" | "decode", point: string, take: () => Promise<T>): Promise<T> {
    return this.phases ? this.phases[phase].take(point, take) : take();
  }

  private resampled(): ResampleSummary | undefined {
    return this.phases && summarize(DISTURBED_LATENESS, [this.phases.prefill, this.phases.decode]);
  }

  private log(line: string): void {
    this.o.log?.(`  ${this.o.iid}: ${line}`);
  }

  async health(): Promise<void> {
    let status: number | string;
    try {
      status = (await this.http.get("/health", this.o.probeTimeoutS)).status;
    } catch (err) {
      status = (err as Error).message;
    }
    if (status !== 200) throw new ProfileError("NARWHAL_PROFILE_UNHEALTHY", `${this.o.iid}: not healthy, aborting (${this.http.label} /health answered ${status}, not 200)`);
  }

  private async tokenize(prompt: string): Promise<{ count: number; maxModelLen: unknown }> {
    const r = await this.http.post("/tokenize", { model: this.o.model, prompt }, this.o.probeTimeoutS);
    if (r.status !== 200) throw new ProfileError("NARWHAL_PROFILE_PROBE", `tokenize probe failed on ${this.http.label} (${r.status}): ${r.body.slice(0, 200)}`);
    const body = parse(r.body);
    if (!body) throw new ProfileError("NARWHAL_PROFILE_PROBE", `tokenize probe returned no count on ${this.http.label}: ${r.body.slice(0, 200)}`);
    const count = body.count;
    if (!Number.isInteger(count) || (count as number) < 1) throw new ProfileError("NARWHAL_PROFILE_PROBE", `tokenize probe counted ${JSON.stringify(count)} tokens on ${this.http.label}`);
    return { count: count as number, maxModelLen: body.max_model_len };
  }

  /** The live context limit, read from `/tokenize` as narwhal does. */
  async maxModelLen(): Promise<number> {
    const { maxModelLen } = await this.tokenize(WORD);
    if (!Number.isInteger(maxModelLen) || (maxModelLen as number) < 2) {
      throw new ProfileError("NARWHAL_PROFILE_MAX_MODEL_LEN", `tokenize probe returned no valid max_model_len for ${this.o.model} on ${this.http.label} (got ${JSON.stringify(maxModelLen)})`);
    }
    return maxModelLen as number;
  }

  /** A prompt of exactly `target` tokens where the tokenizer allows it; the count is the engine's own. */
  async prompt(target: number): Promise<{ text: string; tokens: number }> {
    let text = WORD.repeat(Math.max(1, target));
    let got = (await this.tokenize(text)).count;
    for (let i = 0; i < 4 && got !== target; i++) {
      const scaled = Math.max(1, Math.floor((text.length * target) / got));
      text = scaled <= text.length ? text.slice(0, scaled) : WORD.repeat(Math.ceil(scaled / WORD.length)).slice(0, scaled);
      got = (await this.tokenize(text)).count;
    }
    return { text, tokens: got };
  }

  async metrics(): Promise<EngineMetricFacts> {
    const r = await this.http.get("/metrics", this.o.probeTimeoutS);
    if (r.status !== 200) return { processStartTime: null, kvCapacityTokens: null, blockTokens: null, prefixCacheHits: null };
    return metricFacts(r.body);
  }

  private checkGeneration(facts: EngineMetricFacts, when: string): void {
    const expected = this.o.processStartTime;
    if (expected === undefined) return;
    if (facts.processStartTime === null || Math.abs(facts.processStartTime - expected) > 1e-3) {
      throw new ProfileError(
        "NARWHAL_PROFILE_GENERATION",
        `${this.o.iid}: engine generation changed ${when} profiling: process_start_time_seconds is ${facts.processStartTime ?? "absent"}, the attested process started at ${expected}`,
      );
    }
  }

  private coldCheck(before: number | null, after: number | null): void {
    const hit = before === null || after === null || after < before ? null : after - before;
    this.record.prefix_cache_hit_tokens = hit;
    if (hit) {
      throw new ProfileError("NARWHAL_PROFILE_COLD", `${this.o.iid} served ${hit} prompt tokens from its prefix cache during cold profiling; reserve the engine for profiling and repeat the sweep`);
    }
  }

  private completionBody(prompt: string, tokens: number, stream: boolean): Record<string, unknown> {
    return {
      model: this.o.model,
      prompt,
      max_tokens: tokens,
      temperature: 0,
      stream,
      min_tokens: tokens,
      ignore_eos: true,
      // vLLM hashes cache_salt into the first block: a fresh salt shares no prefix even with caching on.
      cache_salt: randomBytes(24).toString("base64url"),
      ...(stream ? { return_token_ids: true, stream_interval: 1 } : {}),
    };
  }

  /** One one-token completion: its wall time, after checking the engine counted exactly `tokens` input tokens. */
  private async prefillOnce(prompt: string, tokens: number): Promise<number> {
    const start = this.http.now();
    const r = await this.http.post("/v1/completions", this.completionBody(prompt, PREFILL_OUTPUT_TOKENS, false), this.o.requestTimeoutS);
    const elapsed = this.http.now() - start;
    if (r.status !== 200) throw new ProfileError("NARWHAL_PROFILE_PROBE", `prefill probe failed on ${this.http.label} (${r.status}): ${r.body.slice(0, 200)}`);
    const body = parse(r.body);
    const usage = body?.usage as Record<string, unknown> | undefined;
    const choices = body?.choices as Array<Record<string, unknown>> | undefined;
    const valid =
      !!body && !body.error && !!usage && usage.prompt_tokens === tokens && usage.completion_tokens === 1 && Array.isArray(choices) && choices.length === 1 && choices[0].finish_reason === "length";
    if (!valid) throw new ProfileError("NARWHAL_PROFILE_PROBE", `prefill probe on ${this.http.label} lacks a complete response with exact token usage (expected ${tokens} prompt tokens)`);
    return elapsed;
  }

  private overflow(kind: "prefill" | "decode", input: number, output: number, maxModelLen: number): void {
    if (input + output <= maxModelLen) return;
    const what = kind === "prefill" ? "one output token" : `${output} output tokens`;
    const setting = kind === "prefill" ? "--prefill-lens (profiling.prefillLens)" : "--decode-input-lens (profiling.decodeInputLens)";
    throw new ProfileError("NARWHAL_PROFILE_OVERFLOW", `${kind} input ${input} plus ${what} exceeds ${this.http.label} max_model_len ${maxModelLen}; choose shorter ${setting}`);
  }

  async prefillSweep(s: Sweep, maxModelLen: number): Promise<void> {
    for (const target of s.prefillLens) {
      const { text, tokens } = await this.prompt(target);
      this.overflow("prefill", tokens, PREFILL_OUTPUT_TOKENS, maxModelLen);
      const first = this.record.prefill.length;
      for (let i = 0; i < s.prefillRepeats; i++) this.record.prefill.push([tokens, await this.sample("prefill", `prefill ${tokens} #${i + 1}`, () => this.prefillOnce(text, tokens))]);
      const m = median(this.record.prefill.slice(first).map((p) => p[1]));
      this.log(`prefill ${String(tokens).padStart(6)} tok -> ${(m * 1000).toFixed(1)} ms median`);
    }
  }

  /** One cohort of `size` streams of `tokens` tokens on the same prompt, all started together. */
  async cohort(prompt: string, inputTokens: number, size: number, tokens: number): Promise<Cohort> {
    const c = new Cohort(size, inputTokens, tokens);
    const run = async () => {
      const s = c.stream();
      let done = false;
      let complete = false;
      try {
        const r = await this.http.stream(
          "/v1/completions",
          this.completionBody(prompt, tokens, true),
          ({ at, event }) => {
            if (done) return;
            if (event.done) {
              done = true;
              return;
            }
            if ("malformed" in event) throw new ProfileError("NARWHAL_PROFILE_PROBE", "decode probe returned malformed SSE");
            const obj = event.data as Record<string, unknown> | null;
            if (!obj || obj.error) throw new ProfileError("NARWHAL_PROFILE_PROBE", `decode probe returned an error: ${JSON.stringify(obj?.error ?? obj).slice(0, 200)}`);
            const choices = obj.choices;
            if (!Array.isArray(choices) || choices.length > 1) throw new ProfileError("NARWHAL_PROFILE_PROBE", "decode probe returned invalid choices");
            if (!choices.length) return; // the usage chunk
            const choice = choices[0] as Record<string, unknown>;
            // vLLM streams each chunk's token ids with return_token_ids; without them a chunk is one token.
            const ids = Array.isArray(choice.token_ids) ? choice.token_ids.length : 1;
            s.chunk(ids, (choice.finish_reason as string | null | undefined) ?? null, at);
          },
          this.o.requestTimeoutS,
        );
        if (r.status !== 200) throw new ProfileError("NARWHAL_PROFILE_PROBE", `decode probe failed on ${this.http.label} (${r.status}): ${(r.errorBody ?? "").slice(0, 200)}`);
        if (!done) throw new ProfileError("NARWHAL_PROFILE_PROBE", `decode probe on ${this.http.label} ended without [DONE]`);
        complete = true;
      } finally {
        // Leaving the cohort also checks a completed stream delivered exactly its forced tokens.
        s.end(this.http.now(), complete);
      }
    };
    const results = await Promise.allSettled(Array.from({ length: size }, run));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    return c;
  }

  /** One decode replicate: a cohort, run again with longer streams when too few of its intervals overlapped. */
  private async replicate(text: string, input: number, size: number, tokens: number, maxModelLen: number): Promise<{ c: Cohort; used: number }> {
    let used = tokens;
    let c = await this.cohort(text, input, size, used);
    if (c.intervals.length < 2 * size) {
      // narwhal stretches streams that left before the last joined; a cohort that did overlap but
      // too briefly gets twice the tokens, within the context left after the input.
      const stretched = overlappingTokens(c, maxModelLen - input);
      const doubled = c.joined === size && 2 * used <= maxModelLen - input ? 2 * used : undefined;
      const retry = stretched ?? doubled;
      if (retry !== undefined) {
        used = retry;
        this.overflow("decode", input, used, maxModelLen);
        c = await this.cohort(text, input, size, used);
      }
    }
    return { c, used };
  }

  async decodeSweep(s: Sweep, maxModelLen: number): Promise<number> {
    let maxTokensUsed = s.decodeTokens;
    let warmed = false;
    for (const target of s.decodeInputLens) {
      const { text, tokens: input } = await this.prompt(target);
      this.overflow("decode", input, s.decodeTokens, maxModelLen);
      if (!warmed) {
        // An engine's first decode at each batch size can include kernel compilation; it stays out of the fit.
        for (const size of s.decodeConcurrency) await this.cohort(text, input, size, s.decodeTokens);
        warmed = true;
      }
      for (const size of s.decodeConcurrency) {
        const replicates: DecodePoint[] = [];
        for (let repeat = 0; repeat < s.decodeRepeats; repeat++) {
          const { c, used } = await this.sample("decode", `decode isl=${input} c=${size} #${repeat + 1}`, () => this.replicate(text, input, size, s.decodeTokens, maxModelLen));
          if (c.intervals.length < 2 * size) {
            throw new ProfileError(
              "NARWHAL_PROFILE_PROBE",
              `decode probe has insufficient complete-cohort intervals: got ${c.intervals.length}, need ${2 * size}, isl=${input}, c=${size}, tokens=${used}`,
            );
          }
          maxTokensUsed = Math.max(maxTokensUsed, used);
          this.record.decode_intervals.push({ input_tokens: input, concurrency: size, repeat, tokens: used, intervals: c.intervals });
          // The mean gap keeps total service time when stalled tokens arrive in a burst.
          replicates.push([median(c.intervals.map((i) => i[0])), median(c.intervals.map((i) => i[1])), mean(c.intervals.map((i) => i[2]))]);
        }
        const point: [number, number, number] = [median(replicates.map((r) => r[0])), median(replicates.map((r) => r[1])), median(replicates.map((r) => r[2]))];
        this.record.decode.push(point);
        this.log(`decode  isl=${input} c=${size} batch~${point[1].toFixed(0)} tok, seq~${point[0].toFixed(0)} -> ${(point[2] * 1000).toFixed(2)} ms/token`);
      }
    }
    return maxTokensUsed;
  }

  /** The whole sweep; every stop condition throws a {@link ProfileError} with `record` holding what was seen. */
  async run(): Promise<Measurement> {
    try {
      const m = await this.runInner();
      const resampled = (this.record.resampled = this.resampled());
      return resampled ? { ...m, resampled } : m;
    } catch (caught) {
      this.record.resampled = this.resampled();
      // A connection lost mid-sweep is asked about: a dead or restarted engine is named as that.
      const err = (await classifyEngineFailure(caught, {
        engineId: this.o.iid,
        during: "profile",
        probe: probeOver((path) => this.http.get(path, this.o.probeTimeoutS)),
        processStartTime: this.o.processStartTime ?? this.record.process_start_time_seconds,
      })) as Error;
      this.record.error = `${err.name}: ${err.message}`;
      throw err;
    }
  }

  /** The prefill stop, with how the machine stood while its samples were taken: noise or the engine. */
  private judged<T>(fit: () => T): T {
    try {
      return fit();
    } catch (err) {
      const resampled = this.resampled();
      if (!resampled || !(err instanceof ProfileError) || err.code !== "NARWHAL_PROFILE_PREFILL_FIT") throw err;
      throw new ProfileError(err.code, `${err.message} (${resampleBrief(resampled)})`);
    }
  }

  private async runInner(): Promise<Measurement> {
    const o = this.o;
    await this.health();
    const maxModelLen = await this.maxModelLen();
    this.record.max_model_len = maxModelLen;
    const sweep = boundedSweep(o.sweep, maxModelLen, o.maxNumSeqs);
    this.record.sweep = sweepRecord(sweep);
    if (o.contention) {
      const budget = (samples: number) => ({ budget: RETAKES_PER_PHASE_SAMPLE * samples, traffic: o.traffic });
      this.phases = {
        prefill: new Resampler(o.contention, budget(sweep.prefillLens.length * sweep.prefillRepeats)),
        decode: new Resampler(o.contention, budget(sweep.decodeInputLens.length * sweep.decodeConcurrency.length * sweep.decodeRepeats)),
      };
    }
    if (o.maxNumSeqs !== undefined) this.record.max_num_seqs = o.maxNumSeqs;
    this.log(
      `max_model_len ${maxModelLen}; prefill up to ${Math.max(...sweep.prefillLens)}, decode input up to ${Math.max(...sweep.decodeInputLens)}, decode concurrency up to ${Math.max(...sweep.decodeConcurrency)}`,
    );
    const before = await this.metrics();
    this.checkGeneration(before, "before");
    if (before.processStartTime !== null) this.record.process_start_time_seconds = before.processStartTime;
    this.record.prefill_block_tokens = before.blockTokens;

    // Warm the model: the first completion after a start pays one-off costs a profile must not carry.
    const warm = await this.prompt(Math.min(64, maxModelLen - 9));
    const t0 = this.http.now();
    await this.cohort(warm.text, warm.tokens, 1, 8);
    this.record.warm_up = { tokens: warm.tokens, seconds: this.http.now() - t0 };

    await this.prefillSweep(sweep, maxModelLen);
    this.coldCheck(before.prefixCacheHits, (await this.metrics()).prefixCacheHits);
    const prefill = this.judged(() => fitPrefill(this.record.prefill, before.blockTokens));
    this.record.prefill_fit_points = prefill.representatives;
    this.record.prefill_fit_mape = prefill.mape;
    this.record.prefill_fit_worst_point = prefill.worst;
    this.log(`prefill median fit MAPE ${pct(prefill.mape)}`);

    const decodeMaxOutputTokens = await this.decodeSweep(sweep, maxModelLen);
    const after = await this.metrics();
    this.coldCheck(before.prefixCacheHits, after.prefixCacheHits);
    this.checkGeneration(after, "during");
    if (before.processStartTime !== null && after.processStartTime !== before.processStartTime) {
      throw new ProfileError("NARWHAL_PROFILE_GENERATION", `${o.iid}: engine generation changed during profiling`);
    }
    const points = this.record.decode;
    const decode = fitDecodePlane(points);
    const decodeFitMape = decodeMape(points, decode);
    const decodeCvMape = decodeCrossValidationMape(points);
    this.log(`decode fit MAPE ${pct(decodeFitMape)}; cross-validation ${decodeCvMape === null ? "unavailable" : pct(decodeCvMape)}`);
    return {
      maxModelLen,
      sweep,
      prefill,
      decode,
      decodePoints: points,
      decodeFitMape,
      decodeCvMape,
      blockTokens: before.blockTokens,
      kvCapacityTokens: after.kvCapacityTokens ?? before.kvCapacityTokens,
      decodeMaxOutputTokens,
      processStartTime: before.processStartTime,
    };
  }
}

/** An engine's profile row from one sweep: its fits and domain, bound to the generation it measured. */
export function measuredRow(iid: string, generationDigest: string, m: Measurement, raw: MeasureRecord): ProfileRow {
  return buildRow({
    iid,
    generationDigest,
    prefill: m.prefill,
    prefillSamples: raw.prefill,
    blockTokens: m.blockTokens,
    decode: m.decode,
    decodePoints: m.decodePoints,
    decodeFitMape: m.decodeFitMape,
    decodeCvMape: m.decodeCvMape,
    kvCapacityTokens: m.kvCapacityTokens,
    decodeMaxOutputTokens: m.decodeMaxOutputTokens,
  });
}
