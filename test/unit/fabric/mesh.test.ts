import { expect } from "chai";
import { parseFleetConfig } from "../../../lib/config/parse";
import type { FabricError } from "../../../lib/fabric/errors";
import { edgeBudget, meshEdges, meshEngines, type MeshEngine } from "../../../lib/fabric/mesh";

function thrown(fn: () => unknown): FabricError {
  try {
    fn();
  } catch (err) {
    return err as FabricError;
  }
  throw new Error("expected an error");
}

const hosts = ["a", "b", "c"].map((alias, i) => ({ alias, destination: `root@10.0.0.${i + 1}`, fabricInterface: "fab0" }));
const model = { servedName: "tiny", checkpointDir: "/models/tiny" };

describe("fabric mesh", () => {
  it("takes each engine's host, pool, pin and transport from the config, overrides first", () => {
    const spec = parseFleetConfig({
      hosts,
      model,
      launch: { transport: "ucx_rdma", rdma: { hcas: ["mlx5_0:1"], gidIndex: 3 } },
      engines: [
        { id: "e1", host: "a", gpuIds: [0] },
        { id: "e2", host: "b", gpuIds: [0], pin: true, overrides: { rdma: { hcas: ["mlx5_2:2"] } } },
      ],
    });
    expect(meshEngines(spec)).to.deep.equal([
      { id: "e1", host: "a", role: "prefill", pin: false, transport: "ucx_rdma", rdma: { hca: "mlx5_0", port: 1, gidIndex: 3 } },
      { id: "e2", host: "b", role: "decode", pin: true, transport: "ucx_rdma", rdma: { hca: "mlx5_2", port: 2, gidIndex: null } },
    ]);
  });

  it("gives each edge one transport, and RDMA ports from its first producer and first consumer", () => {
    const engines: MeshEngine[] = [
      { id: "e1", host: "a", role: "prefill", pin: false, transport: "ucx_rdma", rdma: { hca: "mlx5_0", port: 1, gidIndex: 3 } },
      { id: "e2", host: "b", role: "decode", pin: false, transport: "ucx_rdma", rdma: { hca: "mlx5_1", port: 1, gidIndex: 3 } },
    ];
    expect(meshEdges(engines).map((e) => [e.id, e.transport, e.rdma?.source.hca, e.rdma?.destination.hca])).to.deep.equal([
      ["a->b", "ucx_rdma", "mlx5_0", "mlx5_1"],
      ["b->a", "ucx_rdma", "mlx5_1", "mlx5_0"],
    ]);
    const tcp = engines.map((e) => ({ ...e, transport: "tcp" as const, rdma: null }));
    expect(meshEdges(tcp).map((e) => e.rdma)).to.deep.equal([null, null]);
  });

  it("refuses an edge whose engines move KV on different transports", () => {
    const e = thrown(() =>
      meshEdges([
        { id: "e1", host: "a", role: "prefill", pin: false, transport: "tcp", rdma: null },
        { id: "e2", host: "b", role: "decode", pin: false, transport: "ucx_rdma", rdma: { hca: "mlx5_0", port: 1, gidIndex: 3 } },
      ]),
    );
    expect(e.code).to.equal("NARWHAL_FABRIC_EDGE_ENGINES");
    expect(e.message).to.equal(
      "edge a->b: its engines use different transports (e1 tcp, e2 ucx_rdma), and UCX cannot move KV between hosts without a common one; " +
        "give engines on different hosts that exchange KV one transport (launch.transport or engines[].overrides.transport), or pin their roles (engines[].pin) so they do not exchange KV",
    );
  });

  it("lets a fleet mix TCP and RDMA engines whose KV crosses hosts on one transport: one TCP edge and one RDMA edge", () => {
    // a: a pinned TCP prefill and a pinned RDMA decode; b: a pinned RDMA prefill and a pinned TCP decode.
    // KV crosses hosts only tcp->tcp (a->b) and rdma->rdma (b->a); the mixed pairs share a host's memory.
    const spec = parseFleetConfig({
      hosts,
      model,
      launch: { transport: "tcp" },
      engines: [
        { id: "p1", host: "a", gpuIds: [0], role: "prefill", pin: true },
        { id: "d1", host: "a", gpuIds: [1], role: "decode", pin: true, overrides: { transport: "ucx_rdma", rdma: { hcas: ["mlx5_0:1"], gidIndex: 3 } } },
        { id: "p2", host: "b", gpuIds: [0], role: "prefill", pin: true, overrides: { transport: "ucx_rdma", rdma: { hcas: ["mlx5_1:1"] } } },
        { id: "d2", host: "b", gpuIds: [1], role: "decode", pin: true },
      ],
    });
    expect(meshEdges(meshEngines(spec)).map((e) => [e.id, e.producers, e.consumers, e.transport, e.rdma])).to.deep.equal([
      ["a->b", ["p1"], ["d2"], "tcp", null],
      ["b->a", ["p2"], ["d1"], "ucx_rdma", { source: { hca: "mlx5_1", port: 1, gidIndex: null }, destination: { hca: "mlx5_0", port: 1, gidIndex: 3 } }],
    ]);
  });

  it("holds an edge to the largest budget among its source's producers, from the cache groups", () => {
    const engines: MeshEngine[] = [
      { id: "e1", host: "a", role: "prefill", pin: false, transport: "tcp", rdma: null },
      { id: "e2", host: "a", role: "decode", pin: false, transport: "tcp", rdma: null },
      { id: "e3", host: "b", role: "decode", pin: false, transport: "tcp", rdma: null },
    ];
    const groups = [
      { budgets: [{ key: "g1", members: ["e1", "e3"], requiredGbps: 0.5, formula: "f1" }] },
      { budgets: [{ key: "g2", members: ["e2"], requiredGbps: 2, formula: "f2" }] },
    ];
    const [ab, ba] = meshEdges(engines);
    expect(edgeBudget(ab, groups)).to.deep.equal({ requiredGbps: 2, governingEngine: "e2", budgetKey: "g2", formula: "f2" });
    expect(edgeBudget(ba, groups)).to.deep.equal({ requiredGbps: 0.5, governingEngine: "e3", budgetKey: "g1", formula: "f1" });
    // A budget change moves only the figure an edge is judged against.
    const cheaper = [groups[0], { budgets: [{ ...groups[1].budgets[0], requiredGbps: 0.1 }] }];
    expect(edgeBudget(ab, cheaper)).to.deep.include({ requiredGbps: 0.5, governingEngine: "e1" });
  });
});
