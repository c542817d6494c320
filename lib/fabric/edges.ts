/**
 * Gate D's directed fabric edges: the ordered pairs of physical hosts that carry KV between engines.
 *
 * "Every eligible KV producer must be able to transfer to every eligible consumer." Engines run NIXL
 * with kv_both, so the controller may move an unpinned engine between pools: it may produce or consume.
 * A pinned engine stays in its initial pool: pinned decode never produces, pinned prefill never consumes.
 * Engines that share a host share that host's edges, and a transfer inside one host is not a fabric edge
 * (it never leaves the machine). The runbook measures these edges one at a time while engines are idle;
 * with every engine unpinned and one engine per host that is all n(n−1) directed pairs.
 *
 * `host` is the physical machine: two aliases of one machine must be resolved to one value by the caller.
 */
import { FabricError } from "./errors";

export interface EdgeEngine {
  readonly id: string;
  /** The physical host the engine runs on. */
  readonly host: string;
  /** Initial pool. */
  readonly role: "prefill" | "decode";
  /** Kept in its initial pool by the controller. */
  readonly pin: boolean;
}

/** One directed host pair: KV leaves `source` and lands on `destination`. */
export interface FabricEdge {
  /** `<source>-><destination>`. */
  readonly id: string;
  readonly source: string;
  readonly destination: string;
  /** Engines on the source host that may produce KV, in the order given. */
  readonly producers: ReadonlyArray<string>;
  /** Engines on the destination host that may consume KV, in the order given. */
  readonly consumers: ReadonlyArray<string>;
}

/** A pinned decode engine never produces KV. */
export function canProduce(e: Pick<EdgeEngine, "role" | "pin">): boolean {
  return !(e.pin && e.role === "decode");
}

/** A pinned prefill engine never consumes KV. */
export function canConsume(e: Pick<EdgeEngine, "role" | "pin">): boolean {
  return !(e.pin && e.role === "prefill");
}

function checkEngines(engines: ReadonlyArray<EdgeEngine>): void {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const e of engines) {
    if (typeof e.id !== "string" || e.id === "") problems.push(`an engine has no id (${JSON.stringify(e.id)})`);
    else if (seen.has(e.id)) problems.push(`engine id ${e.id} appears more than once`);
    seen.add(e.id);
    if (typeof e.host !== "string" || e.host === "") problems.push(`engine ${e.id} has no host`);
    if (e.role !== "prefill" && e.role !== "decode") problems.push(`engine ${e.id} has role ${JSON.stringify(e.role)}; allowed: prefill, decode`);
    if (typeof e.pin !== "boolean") problems.push(`engine ${e.id} has pin ${JSON.stringify(e.pin)}; allowed: true, false`);
  }
  if (problems.length) throw new FabricError("NARWHAL_FABRIC_EDGE_ENGINES", `cannot derive fabric edges: ${problems.join("; ")}`);
}

const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The directed host pairs that carry KV, ordered by source host, then destination host (code-unit order,
 * so reordering `engines` in the config never reorders the edges).
 */
export function fabricEdges(engines: ReadonlyArray<EdgeEngine>): FabricEdge[] {
  checkEngines(engines);
  const hosts = [...new Set(engines.map((e) => e.host))].sort(byCodeUnit);
  const producersOn = (h: string) => engines.filter((e) => e.host === h && canProduce(e)).map((e) => e.id);
  const consumersOn = (h: string) => engines.filter((e) => e.host === h && canConsume(e)).map((e) => e.id);
  const edges: FabricEdge[] = [];
  for (const source of hosts) {
    const producers = producersOn(source);
    if (producers.length === 0) continue;
    for (const destination of hosts) {
      if (destination === source) continue;
      const consumers = consumersOn(destination);
      if (consumers.length === 0) continue;
      edges.push({ id: `${source}->${destination}`, source, destination, producers, consumers });
    }
  }
  return edges;
}

/** One budget per engine (its budget group's), as far as an edge needs it. */
export interface EdgeRequirement<B extends { readonly requiredGbps: number }> {
  readonly requiredGbps: number;
  /** The producer whose budget is the largest (the first such producer on a tie). */
  readonly governingEngine: string;
  readonly budget: B;
}

/**
 * The budget an edge is measured against: "the source budget", i.e. the largest budget among the
 * producers on its source host (one edge serves every producer there). Throws when a producer has none.
 */
export function edgeRequirement<B extends { readonly requiredGbps: number }>(edge: FabricEdge, budgetByEngine: Readonly<Record<string, B | undefined>>): EdgeRequirement<B> {
  const missing = edge.producers.filter((id) => !Object.prototype.hasOwnProperty.call(budgetByEngine, id) || budgetByEngine[id] === undefined);
  if (missing.length) {
    throw new FabricError("NARWHAL_FABRIC_EDGE_ENGINES", `edge ${edge.id}: no fabric budget for producer${missing.length > 1 ? "s" : ""} ${missing.join(", ")}; budget every engine's group first`);
  }
  let best: { id: string; budget: B } | null = null;
  for (const id of edge.producers) {
    const budget = budgetByEngine[id]!;
    if (best === null || budget.requiredGbps > best.budget.requiredGbps) best = { id, budget };
  }
  return { requiredGbps: best!.budget.requiredGbps, governingEngine: best!.id, budget: best!.budget };
}
