/**
 * Gate A's fleet-wide agreement as the ReplicaAgreement resource judges and records it: every engine host
 * holds the same checkpoint snapshot, and all replicas share one accelerator product and TP shape.
 */
import type { EvidenceArtifact, EvidenceRecordFields } from "../evidence/record";
import { checkReplicaShapes, type ReplicaShape } from "../launch/policy";
import { compareReplicas, replicaDifferenceMessage, type ManifestIdentity, type ReplicaDifference } from "./compare";

export const REPLICA_AGREEMENT_KIND = "replica-agreement";

/** The checkpoint manifest discovery recorded on one engine host. */
export interface HostCheckpoint {
  host: string;
  manifest: ManifestIdentity & { modelTreeSha256: string };
}

/**
 * One way the replicas disagree: the list it concerns, the words of its refusal, and the facts that
 * differ (the checkpoint's first differing file, or the engine setting the shape comes from).
 */
export type Disagreement =
  | { property: "checkpoints"; message: string; checkpoint: ReplicaDifference }
  | { property: "engines"; message: string; configPath: string };

/** Each way the replicas disagree, checkpoint first. */
export function disagreements(engines: ReplicaShape[], checkpoints: HostCheckpoint[]): Disagreement[] {
  const difference = compareReplicas(checkpoints);
  return [
    ...(difference ? [{ property: "checkpoints" as const, message: replicaDifferenceMessage(difference), checkpoint: difference }] : []),
    ...checkReplicaShapes(engines).map((issue) => ({ property: "engines" as const, message: `${issue.path}: ${issue.message}`, configPath: issue.path })),
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

/** A kept refusal, as the agreement that follows it lists it. */
export interface ListedRefusal {
  record: string;
  digest: string;
  verdict: "fail";
  reasons: string[];
  startedAt: string;
  endedAt: string;
}

/**
 * The check's own record: a `fail` one when the replicas disagree, or the agreement that follows one or
 * more refusals (`refusals`, which it lists). It names the hosts it judged (`inputs.hosts`: it runs no
 * command on them, it compares what discovery recorded), each engine's facts as compared, each
 * difference, and the hosts' manifests (`manifests`, written as an artifact).
 */
export function agreementRecord(
  stack: string,
  engines: ReplicaShape[],
  checkpoints: HostCheckpoint[],
  manifests: EvidenceArtifact,
  refusals: ListedRefusal[] = [],
): Omit<EvidenceRecordFields, "stack" | "sourceRevision"> {
  const at = new Date().toISOString();
  const found = disagreements(engines, checkpoints);
  const treeOf = new Map(checkpoints.map((c) => [c.host, c.manifest.modelTreeSha256]));
  const compared = engines.map((e) => ({ engine: e.id, host: e.host, product: e.product, tensorParallelSize: e.tensorParallelSize, modelTreeSha256: treeOf.get(e.host) ?? null }));
  const differences = found.map(({ property, message, ...facts }) => ({ property, ...facts, message }));
  return {
    kind: REPLICA_AGREEMENT_KIND,
    subject: { kind: "fleet", alias: stack },
    inputs: {
      hosts: [...new Set([...engines.map((e) => e.host), ...checkpoints.map((c) => c.host)])].sort(),
      engines,
      checkpoints: checkpoints.map((c) => ({ host: c.host, modelTreeSha256: c.manifest.modelTreeSha256 })),
    } as never,
    commands: [],
    startedAt: at,
    endedAt: at,
    observations: (found.length ? { compared, differences } : { compared, failedAttempts: refusals }) as never,
    verdict: found.length
      ? { status: "fail", reasons: found.map((d) => `${d.property}: ${d.message}`) }
      : { status: "pass", reasons: ["every engine host holds the same checkpoint snapshot; the replicas share one accelerator product and TP shape"] },
    artifacts: [manifests],
  };
}
