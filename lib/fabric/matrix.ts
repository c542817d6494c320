/**
 * Gate D's result across the mesh: the edge matrix (hosts × hosts, Gbit/s and verdict) and the gate's
 * decision. An edge below its budget, or with an invalid measurement, stops the gate; the message names
 * each such edge with its figure and budget, and the runbook's diagnosis list.
 */
import { FabricError } from "./errors";
import type { FabricVerdict } from "./budget";

/** The runbook's fabric correction path, in its order. */
export const FABRIC_DIAGNOSIS: ReadonlyArray<string> = Object.freeze([
  "route",
  "binding",
  "listener",
  "firewall",
  "HCA/GID",
  "MTU",
  "retransmissions or RDMA counters",
  "CPU saturation",
  "concurrent traffic",
]);

/** One measured edge as the gate sees it. */
export interface GateEdge {
  readonly id: string;
  readonly source: string;
  readonly destination: string;
  readonly gbps: number | null;
  readonly requiredGbps: number;
  readonly verdict: FabricVerdict;
  /** The verdict's reason (lib/fabric/budget.ts verdictDetail). */
  readonly reason: string;
  /** Sender retransmits over the test, when the tool reports them. */
  readonly retransmits?: number | null;
}

export interface MatrixCell {
  readonly gbps: number | null;
  readonly requiredGbps: number;
  readonly verdict: FabricVerdict;
}

export interface EdgeMatrix {
  /** Row and column order. */
  readonly hosts: ReadonlyArray<string>;
  /** `cells[source][destination]`; null on the diagonal and where no KV flows (no producer or consumer). */
  readonly cells: Readonly<Record<string, Readonly<Record<string, MatrixCell | null>>>>;
  readonly counts: Readonly<Record<FabricVerdict, number>>;
}

/** The matrix over `hosts` (in the given order); throws when an edge names a host outside it or appears twice. */
export function edgeMatrix(hosts: ReadonlyArray<string>, edges: ReadonlyArray<GateEdge>): EdgeMatrix {
  const known = new Set(hosts);
  const cells: Record<string, Record<string, MatrixCell | null>> = {};
  for (const s of hosts) cells[s] = Object.fromEntries(hosts.map((d) => [d, null]));
  const counts: Record<FabricVerdict, number> = { met: 0, below: 0, invalid: 0 };
  for (const e of edges) {
    if (!known.has(e.source) || !known.has(e.destination) || e.source === e.destination) {
      throw new FabricError("NARWHAL_FABRIC_EDGE_ENGINES", `edge ${e.id} joins ${e.source} and ${e.destination}; the matrix has hosts ${hosts.join(", ")}`);
    }
    if (cells[e.source][e.destination] !== null) throw new FabricError("NARWHAL_FABRIC_EDGE_ENGINES", `edge ${e.id} appears more than once`);
    cells[e.source][e.destination] = { gbps: e.gbps, requiredGbps: e.requiredGbps, verdict: e.verdict };
    counts[e.verdict]++;
  }
  return { hosts: [...hosts], cells, counts };
}

const fmt = (x: number | null): string => (x === null ? "no figure" : `${Number(x.toPrecision(4))} Gbit/s`);

/** What stops the gate, one line per edge that is not met; empty when every edge meets its budget. */
export function gateProblems(edges: ReadonlyArray<GateEdge>): string[] {
  return edges
    .filter((e) => e.verdict !== "met")
    .map((e) => {
      const retrans = typeof e.retransmits === "number" ? `, ${e.retransmits} retransmits` : "";
      return e.verdict === "below"
        ? `edge ${e.id}: measured ${fmt(e.gbps)}${retrans}, below its budget of ${fmt(e.requiredGbps)}`
        : `edge ${e.id}: invalid measurement (${e.reason}); budget ${fmt(e.requiredGbps)}`;
    });
}

/** Throws `NARWHAL_FABRIC_GATE` naming every edge that is not met, with the diagnosis list. */
export function requireGatePassed(edges: ReadonlyArray<GateEdge>): void {
  const problems = gateProblems(edges);
  if (problems.length === 0) return;
  throw new FabricError(
    "NARWHAL_FABRIC_GATE",
    `Gate D: ${problems.length} of ${edges.length} fabric edge(s) do not meet their budget:\n` +
      problems.map((p) => `  - ${p}`).join("\n") +
      `\nDiagnose ${FABRIC_DIAGNOSIS.join(", ")}. Re-sample only after the root cause is identified ` +
      "(`pulumi up --replace <edge URN>`), or change the budget inputs in the stack's fabric section, which re-evaluates without re-measuring.",
  );
}
