/** FabricGate inputs: the hosts of the matrix and each measured edge with the record its figure came from. */
import { z } from "zod";
import { each, isDigest, stackName } from "../input-rules";

export const fabricGateInputs = z.object({
  stack: stackName(),
  hosts: z.unknown().refine((v) => Array.isArray(v) && v.every((h) => typeof h === "string" && h !== ""), { error: "hosts must be a list of host aliases" }),
  edges: z
    .unknown()
    .refine(Array.isArray, { error: "edges must be a list" })
    .superRefine(
      each((edge) =>
        z.object({
          evidence: z.unknown().refine((e) => isDigest((e as { digest?: unknown } | null)?.digest), { error: `edges[${JSON.stringify(edge.id)}].evidence must name the edge's record by its sha256 digest` }),
        }),
      ),
    ),
});
