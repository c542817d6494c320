import { expect } from "chai";
import type { FabricError } from "../../../lib/fabric/errors";
import { edgeMatrix, FABRIC_DIAGNOSIS, gateProblems, requireGatePassed, type GateEdge } from "../../../lib/fabric/matrix";

const edge = (source: string, destination: string, gbps: number | null, requiredGbps: number, verdict: GateEdge["verdict"], extra: Partial<GateEdge> = {}): GateEdge => ({
  id: `${source}->${destination}`,
  source,
  destination,
  gbps,
  requiredGbps,
  verdict,
  reason: "r",
  ...extra,
});

function thrown(fn: () => unknown): FabricError {
  try {
    fn();
  } catch (err) {
    return err as FabricError;
  }
  throw new Error("expected an error");
}

describe("fabric edge matrix and gate", () => {
  it("lays the edges out hosts × hosts, null where no KV flows and on the diagonal", () => {
    const m = edgeMatrix(["a", "b", "c"], [edge("a", "b", 30, 0.9, "met"), edge("b", "a", 0.48, 0.9, "below")]);
    expect(m.hosts).to.deep.equal(["a", "b", "c"]);
    expect(m.cells).to.deep.equal({
      a: { a: null, b: { gbps: 30, requiredGbps: 0.9, verdict: "met" }, c: null },
      b: { a: { gbps: 0.48, requiredGbps: 0.9, verdict: "below" }, b: null, c: null },
      c: { a: null, b: null, c: null },
    });
    expect(m.counts).to.deep.equal({ met: 1, below: 1, invalid: 0 });
  });

  it("refuses an edge outside the hosts, to itself, or twice", () => {
    expect(thrown(() => edgeMatrix(["a"], [edge("a", "b", 1, 1, "met")])).message).to.equal("edge a->b joins a and b; the matrix has hosts a");
    expect(thrown(() => edgeMatrix(["a"], [edge("a", "a", 1, 1, "met")])).code).to.equal("NARWHAL_FABRIC_EDGE_ENGINES");
    expect(thrown(() => edgeMatrix(["a", "b"], [edge("a", "b", 1, 1, "met"), edge("a", "b", 2, 1, "met")])).message).to.equal("edge a->b appears more than once");
  });

  it("passes when every edge is met, and names each other edge with its figure and budget", () => {
    expect(() => requireGatePassed([edge("a", "b", 30, 0.9, "met")])).to.not.throw();
    expect(() => requireGatePassed([])).to.not.throw();
    expect(gateProblems([edge("a", "b", 0.4812345, 0.9, "below", { retransmits: 12 }), edge("b", "a", null, 0.9, "invalid", { reason: "no measurement was recorded" })])).to.deep.equal([
      "edge a->b: measured 0.4812 Gbit/s, 12 retransmits, below its budget of 0.9 Gbit/s",
      "edge b->a: invalid measurement (no measurement was recorded); budget 0.9 Gbit/s",
    ]);
  });

  it("fails the gate with the runbook's diagnosis list", () => {
    const e = thrown(() => requireGatePassed([edge("a", "b", 30, 0.9, "met"), edge("b", "a", 0.5, 0.9, "below")]));
    expect(e.code).to.equal("NARWHAL_FABRIC_GATE");
    expect(e.message.split("\n")[0]).to.equal("Gate D: 1 of 2 fabric edge(s) do not meet their budget:");
    expect(e.message).to.include("  - edge b->a: measured 0.5 Gbit/s, below its budget of 0.9 Gbit/s\n");
    expect(e.message).to.include(`Diagnose ${FABRIC_DIAGNOSIS.join(", ")}.`);
    expect(FABRIC_DIAGNOSIS.join(", ")).to.equal("route, binding, listener, firewall, HCA/GID, MTU, retransmissions or RDMA counters, CPU saturation, concurrent traffic");
  });
});
