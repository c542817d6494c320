/**
 * `--colocated` neighbour load as logic, over in-memory engine clients: paced completions per role,
 * counts restarted after the warm-up period, achieved rates from the measured interval, and the
 * rejections (a neighbour failing during warm-up, a neighbour erroring or completing nothing later,
 * a neighbour whose prompt plus output would not fit).
 */
import { expect } from "chai";
import { performance } from "node:perf_hooks";
import { NeighbourLoad } from "../../../lib/profiling/neighbours";
import { ProfileError } from "../../../lib/profiling/errors";
import type { EngineClient, Reply } from "../../../lib/profiling/client";

type Behaviour = "ok" | "fail" | "fail-later" | "stall";

function client(label: string, behaviour: Behaviour, maxModelLen = 4096): EngineClient & { bodies: Array<Record<string, unknown>> } {
  const bodies: Array<Record<string, unknown>> = [];
  let served = 0;
  const reply = (status: number, body: unknown): Reply => ({ status, body: JSON.stringify(body) });
  return {
    label,
    bodies,
    now: () => performance.now() / 1000,
    get: async () => reply(404, {}),
    stream: async () => ({ status: 404 }),
    async post(path, body) {
      const b = body as Record<string, unknown>;
      if (path === "/tokenize") return reply(200, { count: Math.ceil(String(b.prompt).length / 10), max_model_len: maxModelLen });
      bodies.push(b);
      served++;
      if (behaviour === "fail" || (behaviour === "fail-later" && served > 2)) return reply(500, { error: "boom" });
      if (behaviour === "stall") return new Promise<Reply>(() => undefined);
      return reply(200, { choices: [{ text: "x" }], usage: { prompt_tokens: 1, completion_tokens: b.max_tokens } });
    },
  };
}

const WORKLOAD = { prefillRps: 20, decodeRps: 10, prefillTokens: 64, decodeInputTokens: 32, decodeOutputTokens: 8 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("profiling: colocated neighbour load", () => {
  it("paces each role's requests and reports completions and achieved rates for the measured interval only", async () => {
    const p = client("p", "ok");
    const d = client("d", "ok");
    const load = new NeighbourLoad([{ iid: "n-p", role: "prefill", client: p }, { iid: "n-d", role: "decode", client: d }], "tiny", WORKLOAD, 5);
    await load.start();
    const warm = p.bodies.length;
    await sleep(500);
    const e = load.stop();
    expect(warm).to.be.at.least(1);
    expect(p.bodies[0]).to.include({ model: "tiny", max_tokens: 1, stream: false });
    expect(d.bodies[0]).to.include({ max_tokens: 8, min_tokens: 8, ignore_eos: true });
    expect(p.bodies[0].cache_salt).to.not.equal(p.bodies[1].cache_salt);
    // Paced, never bursting: at most one more than the offered rate allows (a busy machine may deliver fewer).
    expect(e.peers["n-p"].completed).to.be.within(4, 12);
    expect(e.peers["n-d"].completed).to.be.within(2, 7);
    expect(e.completed_prefill + e.completed_decode).to.equal(e.peers["n-p"].completed + e.peers["n-d"].completed);
    expect(e.prefill_rps).to.be.closeTo(e.completed_prefill / e.elapsed_s, 1e-9);
    expect(e.elapsed_s).to.be.within(0.45, 0.8);
    expect([e.offered_prefill_rps_per_peer, e.offered_decode_rps_per_peer]).to.deep.equal([20, 10]);
    expect(e.peers["n-d"]).to.include({ role: "decode", error: null });
  });

  it("rejects a neighbour failing during warm-up, one failing or stalling later, and one that would not fit", async () => {
    const failing = new NeighbourLoad([{ iid: "bad", role: "prefill", client: client("bad", "fail") }], "tiny", WORKLOAD, 5);
    const warmErr = await failing.start().catch((err: Error) => err);
    expect(warmErr).to.be.instanceOf(ProfileError);
    expect((warmErr as Error).message).to.equal('neighbour load failed during warmup: bad: 500: {"error":"boom"}');

    const later = new NeighbourLoad([{ iid: "ok", role: "prefill", client: client("ok", "ok") }, { iid: "late", role: "decode", client: client("late", "fail-later") }, { iid: "stuck", role: "decode", client: client("stuck", "stall") }], "tiny", WORKLOAD, 5);
    await later.start();
    await sleep(400);
    expect(() => later.stop()).to.throw(ProfileError, 'neighbour load failed: late: 500: {"error":"boom"}; stuck: completed 0 requests during measurement');
    const e = later.evidence();
    expect(e.peers.stuck).to.deep.equal({ role: "decode", completed: 0, rps: 0, error: "completed 0 requests during measurement" });
    expect(e.peers.ok.completed).to.be.above(0);
    expect(e.peers.ok.error).to.equal(null);

    const big = new NeighbourLoad([{ iid: "small", role: "decode", client: client("small", "ok", 36) }], "tiny", WORKLOAD, 5);
    const fitErr = await big.start().catch((err: Error) => err);
    expect((fitErr as Error).message).to.equal("neighbour small: 32+8 exceeds max_model_len 36");
  });
});
