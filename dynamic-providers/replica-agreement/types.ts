import type { ManifestIdentity } from "../../lib/checkpoint";
import type { ReplicaShape } from "../../lib/launch/policy";

/** One engine as discovery resolved it: enough to check that replicas agree. */
export type ReplicaEngine = ReplicaShape;

export interface ReplicaAgreementInputs {
  engines: ReplicaEngine[];
  /** The checkpoint manifest discovery recorded on each engine host. */
  checkpoints: Array<{ host: string; manifest: ManifestIdentity & { modelTreeSha256: string } }>;
  /** When set, a disagreement is kept in runs/<stack>/evidence before it is refused. */
  stack?: string;
}

export interface ReplicaAgreementOutputs extends ReplicaAgreementInputs {
  modelTreeSha256: string;
  product: string | null;
  tensorParallelSize: number;
  checkedAt: string;
}
