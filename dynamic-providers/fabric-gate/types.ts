import type { EdgeMatrix, GateEdge } from "../../lib/fabric/matrix";

/** One edge as the gate judges it, with the evidence its figure came from. */
export type GateEdgeInput = GateEdge & { evidence: { relativePath: string; digest: string } };

export interface FabricGateInputs {
  stack: string;
  /** The physical hosts, in matrix order. */
  hosts: string[];
  edges: GateEdgeInput[];
}

export type FabricGateOutputs = FabricGateInputs & {
  matrix: EdgeMatrix;
  evidence: { relativePath: string; digest: string };
};
