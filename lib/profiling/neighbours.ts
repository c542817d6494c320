/**
 * narwhal-profile `--colocated`: paced completions on the other engines of the target's shared GPU
 * group while the target is measured (probe/neighbours.py). A prefill neighbour gets one-token requests
 * of `prefillTokens`, a decode neighbour `decodeInputTokens` plus `decodeOutputTokens`, each at its
 * offered rate, phases spread over one period. After a warm-up period the counts restart; at the end
 * every neighbour must have completed at least one request and failed none, or the measurement is
 * rejected. The evidence keeps each neighbour's role, completion count, achieved rate and error.
 */
import { randomBytes } from "node:crypto";
import type { EngineClient } from "./client";
import { ProfileError } from "./errors";
import { Profiler } from "./measure";
import { DEFAULT_SWEEP } from "./sweep";

export interface ColocatedWorkload {
  prefillRps: number;
  decodeRps: number;
  prefillTokens: number;
  decodeInputTokens: number;
  decodeOutputTokens: number;
}

/** The five options' rule: finite positive rates, positive integer token counts. */
export function workloadProblem(w: Partial<Record<keyof ColocatedWorkload, number | undefined>>): string | undefined {
  const values = [w.prefillRps, w.decodeRps, w.prefillTokens, w.decodeInputTokens, w.decodeOutputTokens];
  if (values.some((v) => v === undefined || !Number.isFinite(v) || v <= 0)) return "--colocated requires positive neighbour rates and token lengths";
  if (values.slice(2).some((v) => !Number.isInteger(v))) return "neighbour token lengths must be integers";
  return undefined;
}

export interface Neighbour {
  iid: string;
  role: "prefill" | "decode";
  client: EngineClient;
}

export interface NeighbourEvidence {
  elapsed_s: number;
  offered_prefill_rps_per_peer: number;
  offered_decode_rps_per_peer: number;
  completed_prefill: number;
  completed_decode: number;
  prefill_rps: number;
  decode_rps: number;
  peers: Record<string, { role: string; completed: number; rps: number; error: string | null }>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

export class NeighbourLoad {
  private counts = new Map<string, number>();
  private errors = new Map<string, string>();
  private stopped = false;
  private started = 0;
  private elapsed: number | undefined;
  private loops: Promise<void>[] = [];

  constructor(
    private readonly peers: readonly Neighbour[],
    private readonly model: string,
    private readonly w: ColocatedWorkload,
    private readonly timeoutS: number,
  ) {
    for (const p of peers) this.counts.set(p.iid, 0);
  }

  private rate(p: Neighbour): number {
    return p.role === "prefill" ? this.w.prefillRps : this.w.decodeRps;
  }

  /** Starts every neighbour's paced load and returns after one warm-up period (the longest). */
  async start(): Promise<void> {
    const jobs: Array<{ p: Neighbour; prompt: string; output: number; phaseS: number }> = [];
    for (const [index, p] of this.peers.entries()) {
      const target = p.role === "prefill" ? this.w.prefillTokens : this.w.decodeInputTokens;
      const output = p.role === "prefill" ? 1 : this.w.decodeOutputTokens;
      const probe = new Profiler(p.client, { iid: p.iid, model: this.model, sweep: DEFAULT_SWEEP, probeTimeoutS: this.timeoutS, requestTimeoutS: this.timeoutS });
      const { text, tokens } = await probe.prompt(target);
      const limit = await probe.maxModelLen();
      if (tokens + output > limit) throw new ProfileError("NARWHAL_PROFILE_OVERFLOW", `neighbour ${p.iid}: ${tokens}+${output} exceeds max_model_len ${limit}`);
      jobs.push({ p, prompt: text, output, phaseS: index / this.peers.length / this.rate(p) });
    }
    this.started = this.now();
    this.loops = jobs.map((j) => this.serve(j.p, j.prompt, j.output, j.phaseS));
    await sleep(1000 * Math.max(...jobs.map((j) => 1 / this.rate(j.p))));
    if (this.errors.size) {
      this.stopped = true;
      throw new ProfileError("NARWHAL_PROFILE_PROBE", `neighbour load failed during warmup: ${this.detail()}`);
    }
    // Warm-up traffic is not part of the measured rates.
    for (const id of this.counts.keys()) this.counts.set(id, 0);
    this.started = this.now();
  }

  private now(): number {
    return this.peers[0].client.now();
  }

  private async serve(p: Neighbour, prompt: string, output: number, phaseS: number): Promise<void> {
    const interval = 1 / this.rate(p);
    let next = this.started + phaseS;
    while (!this.stopped) {
      await sleep(1000 * (next - this.now()));
      if (this.stopped) return;
      try {
        const body = { model: this.model, prompt, max_tokens: output, temperature: 0, stream: false, min_tokens: output, ignore_eos: true, cache_salt: randomBytes(24).toString("base64url") };
        const r = await p.client.post("/v1/completions", body, this.timeoutS);
        if (this.stopped) return;
        if (r.status !== 200) throw new Error(`${r.status}: ${r.body.slice(0, 200)}`);
        const j = JSON.parse(r.body) as { error?: unknown; usage?: { completion_tokens?: unknown } };
        if (j.error || j.usage?.completion_tokens !== output) throw new Error("incomplete neighbour completion");
        this.counts.set(p.iid, this.counts.get(p.iid)! + 1);
      } catch (err) {
        if (!this.stopped) this.errors.set(p.iid, (err as Error).message);
        return;
      }
      next = Math.max(next + interval, this.now());
    }
  }

  private detail(): string {
    return [...this.errors].map(([id, e]) => `${id}: ${e}`).join("; ");
  }

  /** Completed traffic, achieved rates and errors for every neighbour. */
  evidence(): NeighbourEvidence {
    const elapsed = this.elapsed ?? Math.max(this.now() - this.started, 1e-9);
    const sum = (role: string) => this.peers.filter((p) => p.role === role).reduce((s, p) => s + this.counts.get(p.iid)!, 0);
    return {
      elapsed_s: elapsed,
      offered_prefill_rps_per_peer: this.w.prefillRps,
      offered_decode_rps_per_peer: this.w.decodeRps,
      completed_prefill: sum("prefill"),
      completed_decode: sum("decode"),
      prefill_rps: sum("prefill") / elapsed,
      decode_rps: sum("decode") / elapsed,
      peers: Object.fromEntries(
        this.peers.map((p) => [p.iid, { role: p.role, completed: this.counts.get(p.iid)!, rps: this.counts.get(p.iid)! / elapsed, error: this.errors.get(p.iid) ?? null }]),
      ),
    };
  }

  /** Stops the load without waiting for requests in flight; rejects when a neighbour failed or completed none. */
  stop(): NeighbourEvidence {
    this.elapsed = Math.max(this.now() - this.started, 1e-9);
    this.stopped = true;
    for (const [id, n] of this.counts) if (n === 0 && !this.errors.has(id)) this.errors.set(id, "completed 0 requests during measurement");
    if (this.errors.size) throw new ProfileError("NARWHAL_PROFILE_PROBE", `neighbour load failed: ${this.detail()}`);
    return this.evidence();
  }

  /** Ends the load after another failure, keeping what it saw. */
  abandon(): NeighbourEvidence {
    this.elapsed ??= Math.max(this.now() - this.started, 1e-9);
    this.stopped = true;
    return this.evidence();
  }
}
