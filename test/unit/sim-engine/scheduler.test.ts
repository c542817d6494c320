import { expect } from "chai";
import { BlockPool } from "../../../sim/engine/block-pool";
import { DEFAULT_COEFFICIENTS } from "../../../sim/engine/config";
import { decodeStepSeconds, now, prefillSeconds } from "../../../sim/engine/latency";
import { Scheduler, Seq } from "../../../sim/engine/scheduler";

const ZERO = { prefillA: 0, prefillB: 0, prefillC: 0, decodeKv: 0, decodeReq: 0, decodeBase: 0 };

function scheduler(o: { maxNumSeqs?: number; blocks?: number; coefficients?: typeof ZERO; timeScale?: number } = {}) {
  return new Scheduler({
    maxNumSeqs: o.maxNumSeqs ?? 8,
    blockSize: 16,
    pool: new BlockPool(o.blocks ?? 1000),
    coefficients: o.coefficients ?? ZERO,
    timeScale: o.timeScale ?? 1,
  });
}

/** Runs one sequence to `tokens` tokens: prefill, then decode. */
async function run(s: Scheduler, seq: Seq, tokens: number): Promise<void> {
  await s.admit(seq);
  await s.prefill(seq);
  if (tokens > 1) await s.decode(seq, () => seq.generated >= tokens);
}

describe("sim-engine latency formulas", () => {
  it("computes prefill and decode step times from the coefficients", () => {
    expect(prefillSeconds(DEFAULT_COEFFICIENTS, 1000)).to.be.closeTo(2e-8 * 1e6 + 6e-5 * 1000 + 0.005, 1e-12);
    expect(decodeStepSeconds(DEFAULT_COEFFICIENTS, 4096, 4)).to.be.closeTo(0.012 + 3e-6 * 4096 + 0.002 * 4, 1e-12);
  });
});

describe("sim-engine scheduler", () => {
  it("runs at most max_num_seqs sequences; the rest wait in FIFO order", async () => {
    const s = scheduler({ maxNumSeqs: 2 });
    const seqs = [new Seq("a", 10, 5), new Seq("b", 10, 5), new Seq("c", 10, 5)];
    const admitted: string[] = [];
    for (const q of seqs) void s.admit(q).then(() => admitted.push(q.id));
    await new Promise((r) => setImmediate(r));
    expect(admitted).to.deep.equal(["a", "b"]);
    expect(s.numRunning).to.equal(2);
    expect(s.numWaiting).to.equal(1);
    s.finish(seqs[0]);
    await new Promise((r) => setImmediate(r));
    expect(admitted).to.deep.equal(["a", "b", "c"]);
    expect(s.numWaiting).to.equal(0);
  });

  it("waits for KV blocks as well as for a slot", async () => {
    const s = scheduler({ blocks: 4 });
    const big = new Seq("big", 40, 8); // 3 blocks reserved
    const next = new Seq("next", 20, 4); // 2 blocks: does not fit beside it
    await s.admit(big);
    let admitted = false;
    void s.admit(next).then(() => (admitted = true));
    await new Promise((r) => setImmediate(r));
    expect(admitted).to.equal(false);
    s.finish(big);
    await new Promise((r) => setImmediate(r));
    expect(admitted).to.equal(true);
  });

  it("allocates blocks as tokens grow, frees them on finish, and keeps the prompt's blocks on request", async () => {
    const s = scheduler();
    const seq = new Seq("p", 33, 20);
    await run(s, seq, 20);
    expect(seq.blocks).to.have.length(4); // 33 + 20 = 53 tokens
    const kept = s.finish(seq, 33);
    expect(kept).to.have.length(3);
    expect(s.pool.allocatedBlocks).to.equal(3);
    s.release(kept);
    expect(s.pool.allocatedBlocks).to.equal(0);
    expect(s.pool.canReserve(1000)).to.equal(true);
  });

  it("paces decode steps by the formula (batch of one, time scale 1)", async function () {
    const c = { ...ZERO, decodeBase: 0.004, decodeKv: 1e-5, decodeReq: 0.001 };
    const s = scheduler({ coefficients: c });
    const seq = new Seq("d", 100, 51);
    await s.admit(seq);
    await s.prefill(seq);
    const t0 = now();
    await s.decode(seq, () => seq.generated >= 51);
    const elapsed = (now() - t0) / 1000;
    let expected = 0;
    for (let g = 1; g < 51; g++) expected += decodeStepSeconds(c, 100 + g, 1);
    expect(elapsed).to.be.closeTo(expected, expected * 0.1);
  });
});
