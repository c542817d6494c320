/**
 * Gate A's fleet-wide agreement as the ReplicaAgreement resource judges and records it: every engine host
 * holds the same checkpoint snapshot, and all replicas share one accelerator product and TP shape.
 */
import type { EvidenceArtifact, EvidenceRecordFields } from "../evidence";
import { checkReplicaShapes, type ReplicaShape } from "../launch/policy";
import { compareReplicas, replicaDifferenceMessage, type ManifestIdentity } from "./compare";

export const REPLICA_AGREEMENT_KIND = "replica-agreement";

/** The checkpoint manifest discovery recorded on one engine host. */
export interface HostCheckpoint {
  host: string;
  manifest: ManifestIdentity & { modelTreeSha256: string };
}

/** Each way the replicas disagree, as the property it concerns and the words of its refusal. */
export function disagreements(engines: ReplicaShape[], checkpoints: HostCheckpoint[]): Array<{ property: "checkpoints" | "engines"; message: string }> {
  const difference = compareReplicas(checkpoints);
  return [
    ...(difference ? [{ property: "checkpoints" as const, message: replicaDifferenceMessage(difference) }] : []),
    ...checkReplicaShapes(engines).map((issue) => ({ property: "engines" as const, message: `${issue.path}: ${issue.message}` })),
  ];
}

/** What the agreed replicas share, as the resource's outputs add it. */
export function agreement(engines: ReplicaShape[], checkpoints: HostCheckpoint[]) {
  return {
    modelTreeSha256: checkpoints[0]?.manifest.modelTreeSha256 ?? "",
    product: engines[0]?.product ?? null,
    tensorParallelSize: engines[0]?.tensorParallelSize ?? 0,
    checkedAt: new Date().toISOString(),
  };
}

/**
 * The check's own record: a `fail` one with its reasons, or the agreement that follows one, with the hosts'
 * manifests (`manifests`, written as an artifact) and the engines' shapes it judged.
 */
export function agreementRecord(
  stack: string,
  engines: ReplicaShape[],
  checkpoints: HostCheckpoint[],
  reasons: string[],
  manifests: EvidenceArtifact,
): Omit<EvidenceRecordFields, "stack" | "sourceRevision"> {
  const at = new Date().toISOString();
  return {
    kind: REPLICA_AGREEMENT_KIND,
    subject: { kind: "fleet", alias: stack },
    inputs: { engines, checkpoints: checkpoints.map((c) => ({ host: c.host, modelTreeSha256: c.manifest.modelTreeSha256 })) } as never,
    commands: [],
    startedAt: at,
    endedAt: at,
    observations: {},
    verdict: reasons.length ? { status: "fail", reasons } : { status: "pass", reasons: ["every engine host holds the same checkpoint snapshot; the replicas share one accelerator product and TP shape"] },
    artifacts: [manifests],
  };
}
