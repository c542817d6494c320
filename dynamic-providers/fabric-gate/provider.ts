/**
 * FabricGate provider methods (Gate D's decision), loaded at call time by resource.ts (see ../shim.ts).
 * create/update: the edge matrix from the edges' recorded figures and verdicts, written as an evidence
 * record (also when the gate is blocked), then a failure naming every edge that is not met. Nothing is
 * measured here: the edges hold their figures, so a budget change re-judges without re-sampling.
 */
import type * as pulumi from "@pulumi/pulumi";
import { edgeMatrix, gateProblems, requireGatePassed } from "../../lib/fabric/matrix";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import { evidenceProvider } from "../evidence-provider";
import { fabricGateInputs, type FabricGateInputs, type FabricGateOutputs } from "./check";

async function judge(inputs: FabricGateInputs): Promise<FabricGateOutputs> {
  const startedAt = new Date().toISOString();
  const matrix = edgeMatrix(inputs.hosts, inputs.edges);
  const problems = gateProblems(inputs.edges);
  const evidence = await providerEvidence(inputs.stack).record({
    kind: "fabric-matrix",
    subject: { kind: "fleet", alias: inputs.stack },
    inputs: Object.fromEntries(inputs.edges.map((e) => [e.id, { evidence: e.evidence.digest, requiredGbps: e.requiredGbps }])),
    commands: [],
    startedAt,
    endedAt: new Date().toISOString(),
    observations: { matrix, edges: inputs.edges } as never,
    verdict: { status: problems.length ? "fail" : "pass", reasons: problems },
    artifacts: [],
  });
  requireGatePassed(inputs.edges);
  return { ...inputs, matrix, evidence };
}

// Nothing is measured here: any change re-judges the edges' recorded figures in place.
export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<FabricGateInputs, FabricGateOutputs>({
  measuredAgainst: [],
  updatable: ["stack", "hosts", "edges"],
  inputs: fabricGateInputs,
  async create(inputs) {
    const outs = await judge(inputs);
    return { id: `${inputs.stack}-fabric-${outs.evidence.digest.slice(7, 19)}`, outs };
  },
  update: (_olds, news) => judge(news),
});
