/**
 * Pair selection against narwhal-inference's own `pairs_of` (mesh and ring, 2–6 engines, pinned
 * roles), repeats, and the concurrent schedule: no engine ever has two transfers in flight, a full
 * mesh takes about 2(N−1) rounds, and the sequential mode runs one probe at a time.
 */
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { canConsume, canProduce, validationPairs, withRepeats, type PairEngine, type PairMode, type Probe } from "../../../lib/preflight/pairs";
import { roundRobin, runProbes } from "../../../lib/preflight/schedule";

const PYTHON = path.resolve(__dirname, "../../../.tools/venv/bin/python");

/** Every role/pin layout of n engines worth testing: unpinned, one pinned prefill, pinned prefill + pinned decode, all pinned split. */
function layouts(n: number): PairEngine[][] {
  const ids = Array.from({ length: n }, (_, i) => `e${i}`);
  const base = ids.map((id, i): PairEngine => ({ id, role: i === 0 ? "prefill" : "decode" }));
  return [
    base,
    base.map((e, i) => (i === 0 ? { ...e, pin: true } : e)),
    base.map((e, i) => (i === 0 ? { ...e, pin: true } : i === n - 1 ? { ...e, pin: true } : e)),
    base.map((e, i): PairEngine => ({ ...e, role: i < Math.ceil(n / 2) ? "prefill" : "decode", pin: true })),
  ];
}

function narwhalPairs(cases: Array<{ producers: string[]; consumers: string[]; mesh: boolean }>): Array<Array<[string, string]>> {
  const script = "import json,sys\nfrom narwhal.engines.validation import pairs_of\nprint(json.dumps([pairs_of(c['producers'], c['consumers'], c['mesh']) for c in json.load(sys.stdin)]))";
  return JSON.parse(execFileSync(PYTHON, ["-c", script], { input: JSON.stringify(cases) }).toString());
}

describe("preflight: pair selection", () => {
  const all = [2, 3, 4, 5, 6].flatMap((n) => layouts(n)).flatMap((engines) => (["mesh", "ring"] as PairMode[]).map((mode) => ({ engines, mode })));

  it("selects exactly narwhal's pairs, in its order, for mesh and ring on 2–6 engines with pinned roles", () => {
    const want = narwhalPairs(all.map(({ engines, mode }) => ({ producers: engines.filter(canProduce).map((e) => e.id), consumers: engines.filter(canConsume).map((e) => e.id), mesh: mode === "mesh" })));
    all.forEach(({ engines, mode }, i) => {
      expect(validationPairs(engines, mode).map((p) => [p.producer, p.consumer]), `${mode} ${JSON.stringify(engines)}`).to.deep.equal(want[i]);
    });
  });

  it("never crosses a pin, covers every ordered eligible pair in the mesh and every eligible engine in the ring", () => {
    for (const { engines, mode } of all) {
      const pairs = validationPairs(engines, mode);
      const byId = new Map(engines.map((e) => [e.id, e]));
      for (const p of pairs) {
        expect(p.producer).to.not.equal(p.consumer);
        expect(canProduce(byId.get(p.producer)!), `${p.producer} may not produce`).to.equal(true);
        expect(canConsume(byId.get(p.consumer)!), `${p.consumer} may not consume`).to.equal(true);
      }
      const producers = engines.filter(canProduce).map((e) => e.id);
      const consumers = engines.filter(canConsume).map((e) => e.id);
      if (mode === "mesh") {
        const expected = producers.flatMap((a) => consumers.filter((b) => b !== a).map((b) => `${a}>${b}`)).sort();
        expect(pairs.map((p) => `${p.producer}>${p.consumer}`).sort()).to.deep.equal(expected);
      } else {
        for (const a of producers) if (consumers.some((b) => b !== a)) expect(pairs.some((p) => p.producer === a), `ring misses producer ${a}`).to.equal(true);
        for (const b of consumers) if (producers.some((a) => a !== b)) expect(pairs.some((p) => p.consumer === b), `ring misses consumer ${b}`).to.equal(true);
        expect(pairs.length).to.be.at.most(producers.length + consumers.length);
      }
    }
  });

  it("repeats each pair N times, each repeat its own probe, and refuses fewer than one", () => {
    const pairs = validationPairs(layouts(3)[0], "mesh");
    const probes = withRepeats(pairs, 3);
    expect(probes).to.have.length(pairs.length * 3);
    expect(probes.filter((p) => p.producer === "e0" && p.consumer === "e1").map((p) => p.repeat)).to.deep.equal([0, 1, 2]);
    expect(() => withRepeats(pairs, 0)).to.throw(/repeats.*at least 1/);
  });
});

describe("preflight: concurrent schedule", () => {
  const check = (probes: Probe[]) => {
    const rounds = roundRobin(probes);
    for (const round of rounds) {
      const engines = round.flatMap((p) => [p.producer, p.consumer]);
      expect(new Set(engines).size, `round ${JSON.stringify(round)}`).to.equal(engines.length);
    }
    expect(rounds.flat().length).to.equal(probes.length);
    const key = (p: Probe) => `${p.producer}>${p.consumer}#${p.repeat}`;
    expect(rounds.flat().map(key).sort()).to.deep.equal(probes.map(key).sort());
    return rounds;
  };

  it("packs a full mesh of N engines into 2(N−1) rounds (2N when N is odd) with no engine twice in a round", () => {
    for (let n = 2; n <= 16; n++) {
      const rounds = check(withRepeats(validationPairs(layouts(n)[0], "mesh"), 1));
      expect(rounds.length, `${n} engines`).to.equal(n % 2 === 0 ? 2 * (n - 1) : 2 * n);
    }
  });

  it("schedules ring, pinned and repeated selections without two transfers on one engine", () => {
    for (let n = 2; n <= 6; n++) for (const engines of layouts(n)) for (const mode of ["mesh", "ring"] as PairMode[]) for (const r of [1, 2, 3]) check(withRepeats(validationPairs(engines, mode), r));
  });

  it("never has two transfers in flight on one engine while running, and overlaps independent pairs", async () => {
    const probes = withRepeats(validationPairs(layouts(6)[0], "mesh"), 2);
    const busy = new Set<string>();
    let overlap = 0;
    let inFlight = 0;
    const out = await runProbes(probes, "concurrent", async (p) => {
      for (const e of [p.producer, p.consumer]) {
        expect(busy.has(e), `${e} already has a transfer in flight`).to.equal(false);
        busy.add(e);
      }
      inFlight++;
      overlap = Math.max(overlap, inFlight);
      await new Promise((r) => setTimeout(r, 2 + Math.random() * 5));
      inFlight--;
      busy.delete(p.producer);
      busy.delete(p.consumer);
      return `${p.producer}>${p.consumer}#${p.repeat}`;
    });
    expect(overlap).to.equal(3);
    expect(out.map((o) => o.result)).to.deep.equal(probes.map((p) => `${p.producer}>${p.consumer}#${p.repeat}`));
  });

  it("runs strictly one probe at a time in sequential mode, in selection order", async () => {
    const probes = withRepeats(validationPairs(layouts(4)[1], "ring"), 2);
    let inFlight = 0;
    const order: string[] = [];
    await runProbes(probes, "sequential", async (p) => {
      expect(++inFlight).to.equal(1);
      order.push(`${p.producer}>${p.consumer}`);
      await new Promise((r) => setTimeout(r, 1));
      inFlight--;
    });
    expect(order).to.deep.equal(probes.map((p) => `${p.producer}>${p.consumer}`));
  });
});
