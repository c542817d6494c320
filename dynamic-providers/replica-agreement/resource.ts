import { dynamicResource } from "../declare";
import type { ReplicaAgreementInputs, ReplicaAgreementOutputs } from "./provider";

/**
 * Gate A: replicas agree on checkpoint, accelerator product and TP shape. Engines depend on it (order
 * only, no values), so a disagreement stops every start while one host's change touches no other plan.
 */
export class ReplicaAgreement extends dynamicResource<ReplicaAgreementInputs, ReplicaAgreementOutputs>()({
  type: "ReplicaAgreement",
  provider: "dynamic-providers/replica-agreement/provider.ts",
  outputs: ["modelTreeSha256", "product", "tensorParallelSize", "checkedAt"],
}) {}
