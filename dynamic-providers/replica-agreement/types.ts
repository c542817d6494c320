import type { ManifestIdentity } from "../../lib/checkpoint";

/** One engine as discovery resolved it: enough to check that replicas agree. */
export interface ReplicaEngine {
  engineIndex: number;
  id: string;
  host: string;
  product: string | null;
  tensorParallelSize: number;
}

export interface ReplicaAgreementInputs {
  engines: ReplicaEngine[];
  /** The checkpoint manifest discovery recorded on each engine host. */
  checkpoints: Array<{ host: string; manifest: ManifestIdentity & { modelTreeSha256: string } }>;
}

export interface ReplicaAgreementOutputs extends ReplicaAgreementInputs {
  modelTreeSha256: string;
  product: string | null;
  tensorParallelSize: number;
  checkedAt: string;
}
