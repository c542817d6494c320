import { expect } from "chai";
import { DEFAULT_SWEEP, type Sweep } from "../../../lib/profiling/sweep";
import { Profiler } from "../../../lib/profiling/measure";
import { ProfileError } from "../../../lib/profiling/errors";
import type { EngineClient, Reply, StreamChunk } from "../../../lib/profiling/client";
import type { ContentionGauge } from "../../../lib/profiling/contention";

/** An engine double answering on a virtual clock: each call is scripted by the test. */
class FakeEngine implements EngineClient {
  readonly label = "e0 at http://engine";
  clock = 0;
  health = 200;
  maxModelLen: unknown = 4096;
  processStart = 1000.5;
  /** Tokens the tokenizer counts for a text. */
  count = (text: string) => Math.ceil(text.length / 10);
  completions = 0;

  async get(path: string): Promise<Reply> {
    if (path === "/health") return { status: this.health, body: "" };
    if (path === "/metrics") return { status: 200, body: `process_start_time_seconds ${this.processStart}\n` };
    return { status: 404, body: "" };
  }

  async post(path: string, body: any): Promise<Reply> {
    if (path === "/tokenize") return { status: 200, body: JSON.stringify({ count: this.count(body.prompt), max_model_len: this.maxModelLen, tokens: [] }) };
    this.completions++;
    const n = this.count(body.prompt);
    this.clock += 0.01 + n * 1e-5;
    return { status: 200, body: JSON.stringify({ choices: [{ text: "x", finish_reason: "length" }], usage: { prompt_tokens: n, completion_tokens: 1 } }) };
  }

  async stream(_path: string, body: any, on: (c: StreamChunk) => void): Promise<{ status: number }> {
    for (let i = 1; i <= body.max_tokens; i++) {
      this.clock += 0.01;
      on({ at: this.clock, event: { done: false, data: { choices: [{ text: "x", finish_reason: i === body.max_tokens ? "length" : null }] } } });
    }
    on({ at: this.clock, event: { done: true } });
    return { status: 200 };
  }

  now(): number {
    return this.clock;
  }
}

const sweep: Sweep = { ...DEFAULT_SWEEP, prefillLens: [256, 512, 1024], decodeInputLens: [256, 512], decodeConcurrency: [1, 2] };
const options = { iid: "e0", model: "m", sweep, probeTimeoutS: 5, requestTimeoutS: 5, processStartTime: 1000.5 };

async function stopOf(p: Profiler): Promise<ProfileError> {
  try {
    await p.run();
  } catch (err) {
    return err as ProfileError;
  }
  throw new Error("the sweep did not stop");
}

describe("profiling driver stop conditions", () => {
  it("stops on a /health that is not 200, before any completion", async () => {
    const e = new FakeEngine();
    e.health = 503;
    const err = await stopOf(new Profiler(e, options));
    expect(err.code).to.equal("NARWHAL_PROFILE_UNHEALTHY");
    expect(err.message).to.match(/^e0: not healthy, aborting/);
    expect(e.completions).to.equal(0);
  });

  for (const bad of [undefined, 0, 1, "4096", 4096.5]) {
    it(`stops on a /tokenize max_model_len of ${JSON.stringify(bad)}`, async () => {
      const e = new FakeEngine();
      e.maxModelLen = bad;
      const err = await stopOf(new Profiler(e, options));
      expect(err.code).to.equal("NARWHAL_PROFILE_MAX_MODEL_LEN");
      expect(err.message).to.contain("tokenize probe returned no valid max_model_len for m on e0 at http://engine");
    });
  }

  it("stops when the live max_model_len leaves too few points, and records it", async () => {
    const e = new FakeEngine();
    e.maxModelLen = 600;
    const p = new Profiler(e, options);
    const err = await stopOf(p);
    expect(err.code).to.equal("NARWHAL_PROFILE_POINTS");
    expect(p.record.max_model_len).to.equal(600);
    expect(p.record.error).to.match(/leaves too few sweep points/);
    expect(e.completions).to.equal(0);
  });

  it("applies the plan's limit to decode concurrency", async () => {
    const e = new FakeEngine();
    const err = await stopOf(new Profiler(e, { ...options, sweep: { ...sweep, decodeConcurrency: [1, 4, 16] }, maxNumSeqs: 1 }));
    expect(err.message).to.equal("max_num_seqs 1 leaves fewer than two decode concurrency points; adjust the engine launch policy before profiling");
  });

  it("checks the tokenised length before a completion: a prompt the tokenizer makes longer than asked overflows", async () => {
    const e = new FakeEngine();
    e.maxModelLen = 1026;
    // Long texts tokenise to 1030 whatever their length: 1024 was asked, 1030 + 1 would not fit 1026.
    e.count = (text) => (text.length > 8000 ? 1030 : Math.ceil(text.length / 10));
    const p = new Profiler(e, options);
    const before = () => e.completions;
    const err = await stopOf(p);
    expect(err.code).to.equal("NARWHAL_PROFILE_OVERFLOW");
    expect(err.message).to.equal("prefill input 1030 plus one output token exceeds e0 at http://engine max_model_len 1026; choose shorter --prefill-lens (profiling.prefillLens)");
    // The 256 and 512 points ran (three repeats each), the overflowing one never did.
    expect(p.record.prefill.map((s) => s[0])).to.deep.equal([256, 256, 256, 512, 512, 512]);
    expect(before()).to.equal(6);
  });

  it("stops when the engine process is not the attested one", async () => {
    const e = new FakeEngine();
    e.processStart = 2000;
    const err = await stopOf(new Profiler(e, options));
    expect(err.code).to.equal("NARWHAL_PROFILE_GENERATION");
    expect(err.message).to.match(/^e0: engine generation changed before profiling/);
  });

  it("stops on a prefill probe without exact token usage", async () => {
    const e = new FakeEngine();
    const post = e.post.bind(e);
    e.post = async (path, body) => (path === "/tokenize" ? post(path, body) : { status: 200, body: JSON.stringify({ choices: [{ finish_reason: "length" }], usage: { prompt_tokens: 1, completion_tokens: 1 } }) });
    const err = await stopOf(new Profiler(e, options));
    expect(err.message).to.match(/lacks a complete response with exact token usage/);
  });

  it("stops a decode probe that finishes short of its forced tokens", async () => {
    const e = new FakeEngine();
    e.stream = async (_p, body: any, on) => {
      on({ at: 1, event: { done: false, data: { choices: [{ text: "x", finish_reason: "stop" }] } } });
      on({ at: 1, event: { done: true } });
      return { status: 200 };
    };
    const err = await stopOf(new Profiler(e, options));
    expect(err.message).to.equal("decode probe stopped before its forced token limit");
  });
});

describe("profiling driver re-sampling", () => {
  /** A gauge marking the n-th sample's first take (1-based, in sweep order) as disturbed: 40% of it late. */
  const gaugeDisturbing = (disturbed: Set<number>): ContentionGauge => {
    let reading = 0;
    return {
      pressure: true,
      begin() {
        const n = ++reading;
        return () => ({ wallS: 0.1, lateS: disturbed.has(n) ? 0.04 : 0, lateness: disturbed.has(n) ? 0.4 : 0.01, pressure: 0.9 });
      },
    };
  };

  it("re-takes only the disturbed prefill sample and keeps the undisturbed take in the sweep's samples", async () => {
    const e = new FakeEngine();
    // The second prefill completion is slowed by the machine: its take is disturbed and must not be kept.
    const post = e.post.bind(e);
    e.post = async (path: string, body: any) => {
      const r = await post(path, body);
      if (path === "/v1/completions" && e.completions === 2) e.clock += 0.5;
      return r;
    };
    const p = new Profiler(e, { ...options, contention: gaugeDisturbing(new Set([2])) });
    await p.run().catch(() => undefined);
    // 9 samples kept (3 lengths × 3 repeats) from 10 completions; none near the 0.5 s stall.
    expect(e.completions).to.equal(10);
    expect(p.record.prefill).to.have.length(9);
    expect(Math.max(...p.record.prefill.map(([, s]) => s))).to.be.below(0.1);
    const r = p.record.resampled!;
    expect(r.points).to.deep.equal([{ point: "prefill 256 #2", lateness: [0.4, 0.01], pressure: [0.9, 0.9], kept: 1 }]);
    expect(r).to.deep.include({ retaken: 1, disturbed: 1, keptDisturbed: 0 });
  });

  it("without a gauge every sample is taken once and nothing is summarised", async () => {
    const e = new FakeEngine();
    const p = new Profiler(e, options);
    await p.run().catch(() => undefined);
    expect(p.record.prefill).to.have.length(9);
    expect(p.record.resampled).to.equal(undefined);
  });
});
