/** FabricGate inputs: the hosts of the matrix and each measured edge with the record its figure came from. */
import { z } from "zod";
import { each, isDigest } from "../../lib/input-rules";
import { stackName } from "../../lib/provider-fields";
import type { EdgeMatrix, GateEdge } from "../../lib/fabric/matrix";
import type { EvidenceRef } from "../../lib/evidence/provider-evidence";

/** One edge as the gate judges it, with the evidence its figure came from. */
export type GateEdgeInput = GateEdge & { evidence: EvidenceRef };

// Lists judged whole, so a refusal names the list rather than an item's place in it.
export const fabricGateInputs = z.object({
  stack: stackName(),
  /** The physical hosts, in matrix order. */
  hosts: z.custom<string[]>().refine((v) => Array.isArray(v) && v.every((h) => typeof h === "string" && h !== ""), { error: "hosts must be a list of host aliases" }),
  edges: z
    .custom<GateEdgeInput[]>()
    .refine((v) => Array.isArray(v), { error: "edges must be a list" })
    .superRefine(
      each((edge) =>
        z.object({
          evidence: z.unknown().refine((e) => isDigest((e as { digest?: unknown } | null)?.digest), { error: `edges[${JSON.stringify(edge.id)}].evidence must name the edge's record by its sha256 digest` }),
        }),
      ),
    ),
});

export type FabricGateInputs = z.infer<typeof fabricGateInputs>;
export type FabricGateOutputs = FabricGateInputs & { matrix: EdgeMatrix; evidence: EvidenceRef };
