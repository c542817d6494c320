import { expect } from "chai";
import { canConsume, canProduce, edgeRequirement, fabricEdges, type EdgeEngine, type FabricEdge } from "../../../lib/fabric/edges";
import type { FabricError } from "../../../lib/fabric/errors";

function thrown(fn: () => unknown): FabricError {
  try {
    fn();
  } catch (err) {
    return err as FabricError;
  }
  throw new Error("expected an error");
}

const e = (id: string, host: string, role: "prefill" | "decode" = "decode", pin = false): EdgeEngine => ({ id, host, role, pin });
const ids = (edges: FabricEdge[]) => edges.map((x) => x.id);

describe("fabric edges", () => {
  it("role eligibility: pinned decode never produces, pinned prefill never consumes", () => {
    expect([canProduce(e("a", "h", "prefill", true)), canConsume(e("a", "h", "prefill", true))]).to.deep.equal([true, false]);
    expect([canProduce(e("a", "h", "decode", true)), canConsume(e("a", "h", "decode", true))]).to.deep.equal([false, true]);
    expect([canProduce(e("a", "h", "prefill")), canConsume(e("a", "h", "prefill"))]).to.deep.equal([true, true]);
    expect([canProduce(e("a", "h", "decode")), canConsume(e("a", "h", "decode"))]).to.deep.equal([true, true]);
  });

  it("2 unpinned engines on 2 hosts: both directions", () => {
    expect(fabricEdges([e("e1", "gpu-a", "prefill"), e("e2", "gpu-b")])).to.deep.equal([
      { id: "gpu-a->gpu-b", source: "gpu-a", destination: "gpu-b", producers: ["e1"], consumers: ["e2"] },
      { id: "gpu-b->gpu-a", source: "gpu-b", destination: "gpu-a", producers: ["e2"], consumers: ["e1"] },
    ]);
  });

  it("2 pinned engines: only prefill host -> decode host", () => {
    expect(ids(fabricEdges([e("e1", "gpu-a", "prefill", true), e("e2", "gpu-b", "decode", true)]))).to.deep.equal(["gpu-a->gpu-b"]);
    // Pinned prefill with an unpinned decode: the decode engine may produce, but nothing on gpu-a consumes.
    expect(ids(fabricEdges([e("e1", "gpu-a", "prefill", true), e("e2", "gpu-b")]))).to.deep.equal(["gpu-a->gpu-b"]);
  });

  it("2 engines on one host: no fabric edge", () => {
    expect(fabricEdges([e("e1", "gpu-a", "prefill"), e("e2", "gpu-a")])).to.deep.equal([]);
  });

  it("3 unpinned engines on 3 hosts: all n(n-1) = 6 directed pairs, in host order", () => {
    expect(ids(fabricEdges([e("e1", "sim2", "prefill"), e("e2", "sim1"), e("e3", "sim4")]))).to.deep.equal([
      "sim1->sim2",
      "sim1->sim4",
      "sim2->sim1",
      "sim2->sim4",
      "sim4->sim1",
      "sim4->sim2",
    ]);
  });

  it("4 engines on 3 hosts (e4 colocated with e1): colocated engines share their host's edges", () => {
    const edges = fabricEdges([e("e1", "sim1", "prefill"), e("e2", "sim2"), e("e3", "sim4"), e("e4", "sim1")]);
    expect(edges).to.have.length(6);
    expect(edges.find((x) => x.id === "sim1->sim2")).to.deep.include({ producers: ["e1", "e4"], consumers: ["e2"] });
    expect(edges.find((x) => x.id === "sim4->sim1")).to.deep.include({ producers: ["e3"], consumers: ["e1", "e4"] });
  });

  it("5 engines with pinned roles and colocation: only role-eligible host pairs", () => {
    const engines = [
      e("e1", "A", "prefill", true),
      e("e2", "A", "decode", true), // colocated with e1: A->A is local, not a fabric edge
      e("e3", "B", "decode", true),
      e("e4", "C", "prefill", true),
      e("e5", "D", "decode"), // unpinned: may produce and consume
    ];
    const edges = fabricEdges(engines);
    expect(ids(edges)).to.deep.equal(["A->B", "A->D", "C->A", "C->B", "C->D", "D->A", "D->B"]);
    expect(edges.find((x) => x.id === "A->D")).to.deep.include({ producers: ["e1"], consumers: ["e5"] });
    expect(edges.find((x) => x.id === "C->A")).to.deep.include({ producers: ["e4"], consumers: ["e2"] });
    expect(edges.find((x) => x.id === "D->A")).to.deep.include({ producers: ["e5"], consumers: ["e2"] });
  });

  it("6 engines, two per host on 3 hosts: 6 edges, each carrying both engines' KV", () => {
    const edges = fabricEdges([e("e1", "h1", "prefill"), e("e2", "h2"), e("e3", "h3"), e("e4", "h1"), e("e5", "h2"), e("e6", "h3")]);
    expect(ids(edges)).to.deep.equal(["h1->h2", "h1->h3", "h2->h1", "h2->h3", "h3->h1", "h3->h2"]);
    expect(edges[0]).to.deep.include({ producers: ["e1", "e4"], consumers: ["e2", "e5"] });
  });

  it("6 unpinned engines on 6 hosts: 30 directed pairs", () => {
    const engines = ["h1", "h2", "h3", "h4", "h5", "h6"].map((h, i) => e(`e${i + 1}`, h, i === 0 ? "prefill" : "decode"));
    expect(fabricEdges(engines)).to.have.length(30);
  });

  it("does not depend on the order engines are listed in", () => {
    const engines = [e("e1", "A", "prefill", true), e("e2", "A", "decode", true), e("e3", "B", "decode", true), e("e4", "C", "prefill", true), e("e5", "D")];
    expect(ids(fabricEdges([...engines].reverse()))).to.deep.equal(ids(fabricEdges(engines)));
  });

  it("has no edge when nothing may produce", () => {
    expect(fabricEdges([e("e1", "A", "decode", true), e("e2", "B", "decode", true)])).to.deep.equal([]);
  });

  it("refuses engines it cannot place, naming each problem", () => {
    const err = thrown(() => fabricEdges([e("e1", "A"), e("e1", ""), { id: "e3", host: "B", role: "router" as "decode", pin: false }]));
    expect(err.code).to.equal("NARWHAL_FABRIC_EDGE_ENGINES");
    expect(err.message).to.equal('cannot derive fabric edges: engine id e1 appears more than once; engine e1 has no host; engine e3 has role "router"; allowed: prefill, decode');
  });

  describe("edge requirement", () => {
    const edge = fabricEdges([e("e1", "h1", "prefill"), e("e4", "h1"), e("e2", "h2")]).find((x) => x.id === "h1->h2")!;

    it("is the largest budget among the source host's producers", () => {
      const budgets = { e1: { requiredGbps: 1.34217728, key: "g1" }, e4: { requiredGbps: 5.36870912, key: "g2" }, e2: { requiredGbps: 9, key: "g3" } };
      expect(edgeRequirement(edge, budgets)).to.deep.equal({ requiredGbps: 5.36870912, governingEngine: "e4", budget: budgets.e4 });
    });

    it("refuses an edge whose producer has no budget", () => {
      const err = thrown(() => edgeRequirement(edge, { e1: { requiredGbps: 1 } }));
      expect(err.code).to.equal("NARWHAL_FABRIC_EDGE_ENGINES");
      expect(err.message).to.equal("edge h1->h2: no fabric budget for producer e4; budget every engine's group first");
    });
  });
});
