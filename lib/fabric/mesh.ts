/**
 * The fleet's fabric mesh as the program measures it: the directed edges (./edges.ts) with, for each,
 * the transport its engines move KV on, the RDMA ports for `ucx_rdma`, and the budget it is held to
 * (the largest budget among its producers' groups, from the captured cache layouts).
 */
import type { FleetSpec } from "../config/types";
import { engineTransport } from "../launch/plan";
import { FabricError } from "./errors";
import { edgeRequirement, fabricEdges, type EdgeEngine, type FabricEdge } from "./edges";

export type Transport = "tcp" | "ucx_rdma";

/** One HCA port of an engine's RDMA config: `hcas[0]` ("mlx5_0:1") and its GID index. */
export interface RdmaEnd {
  readonly hca: string;
  readonly port: number;
  readonly gidIndex: number | null;
}

export interface MeshEngine extends EdgeEngine {
  readonly transport: Transport;
  readonly rdma: RdmaEnd | null;
}

/** What an edge carries, known from the config alone (before any engine runs). */
export interface MeshEdge extends FabricEdge {
  readonly transport: Transport;
  /** For `ucx_rdma`: the source's HCA port (its first producer's) and the destination's (its first consumer's). */
  readonly rdma: { readonly source: RdmaEnd; readonly destination: RdmaEnd } | null;
}

function rdmaEnd(hcas: ReadonlyArray<string> | undefined, gidIndex: number | undefined): RdmaEnd | null {
  const first = hcas?.[0];
  if (!first) return null;
  const [hca, port] = first.split(":");
  return { hca: hca, port: Number(port), gidIndex: gidIndex ?? null };
}

/** Each engine's place in the mesh: host, pool, pin, transport and RDMA port, from the config. */
export function meshEngines(spec: Pick<FleetSpec, "engines" | "launch">): MeshEngine[] {
  return spec.engines.map((e) => {
    const { transport, rdma } = engineTransport(spec, e);
    return { id: e.id, host: e.host, role: e.role, pin: e.pin, transport, rdma: rdma ? rdmaEnd(rdma.hcas, rdma.gidIndex) : null };
  });
}

/**
 * The directed edges in measuring order (./edges.ts), each with one transport. A fleet may mix TCP and
 * RDMA engines (Narwhal declares the transport per engine): engines on one host hand KV over shared
 * memory, so only engines on different hosts that exchange KV must share a transport. An edge joins
 * every producer on its source with every consumer on its destination, so all of them must. Throws
 * `NARWHAL_FABRIC_EDGE_ENGINES` when they do not, or an RDMA engine names no HCA: KV between them could
 * not move on one measured path.
 */
export function meshEdges(engines: ReadonlyArray<MeshEngine>): MeshEdge[] {
  const byId = new Map(engines.map((e) => [e.id, e]));
  return fabricEdges(engines).map((edge) => {
    const joined = [...edge.producers, ...edge.consumers].map((id) => byId.get(id)!);
    const transports = [...new Set(joined.map((e) => e.transport))];
    if (transports.length !== 1) {
      const list = joined.map((e) => `${e.id} ${e.transport}`).join(", ");
      throw new FabricError(
        "NARWHAL_FABRIC_EDGE_ENGINES",
        `edge ${edge.id}: its engines use different transports (${list}), and UCX cannot move KV between hosts without a common one; ` +
          "give engines on different hosts that exchange KV one transport (launch.transport or engines[].overrides.transport), or pin their roles (engines[].pin) so they do not exchange KV",
      );
    }
    const transport = transports[0];
    if (transport === "tcp") return { ...edge, transport, rdma: null };
    const source = byId.get(edge.producers[0])!.rdma;
    const destination = byId.get(edge.consumers[0])!.rdma;
    if (!source || !destination) {
      throw new FabricError("NARWHAL_FABRIC_EDGE_ENGINES", `edge ${edge.id}: transport ucx_rdma needs rdma.hcas on engine ${!source ? edge.producers[0] : edge.consumers[0]}`);
    }
    return { ...edge, transport, rdma: { source, destination } };
  });
}

/** The budgets of the fleet's cache groups, as lib/fleet/cache-summary.ts reports them. */
export interface GroupBudgets {
  readonly budgets: ReadonlyArray<{ readonly key: string; readonly members: ReadonlyArray<string>; readonly requiredGbps: number; readonly formula: string }>;
}

/** What an edge is held to: the largest budget among its producers, and whose it is. */
export interface EdgeBudget {
  readonly requiredGbps: number;
  readonly governingEngine: string;
  readonly budgetKey: string;
  readonly formula: string;
}

/** The budget `edge` must meet, from the fleet's cache groups. */
export function edgeBudget(edge: FabricEdge, groups: ReadonlyArray<GroupBudgets>): EdgeBudget {
  const byEngine: Record<string, { requiredGbps: number; key: string; formula: string }> = {};
  for (const g of groups) for (const b of g.budgets) for (const m of b.members) byEngine[m] = b;
  const r = edgeRequirement(edge, byEngine);
  return { requiredGbps: r.requiredGbps, governingEngine: r.governingEngine, budgetKey: r.budget.key, formula: r.budget.formula };
}
