/**
 * Gate A's fleet-wide agreement: every engine host holds the same checkpoint snapshot, and all
 * replicas share one accelerator product and TP shape. A check, not a measurement: it reads only the
 * discovery records it is given, and failing it stops the deployment before any engine starts.
 */
import type * as pulumi from "@pulumi/pulumi";
import { compareReplicas, replicaDifferenceMessage } from "../../lib/checkpoint";
import { checkReplicaShapes } from "../../lib/launch/policy";
import { UNKNOWN } from "../diff";
import type { ReplicaAgreementInputs, ReplicaAgreementOutputs } from "./types";

function problems(inputs: ReplicaAgreementInputs): pulumi.dynamic.CheckFailure[] {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  const difference = compareReplicas(inputs.checkpoints);
  if (difference) failures.push({ property: "checkpoints", reason: replicaDifferenceMessage(difference) });
  for (const issue of checkReplicaShapes(inputs.engines)) failures.push({ property: "engines", reason: `${issue.path}: ${issue.message}` });
  return failures;
}

function agreed(inputs: ReplicaAgreementInputs): ReplicaAgreementOutputs {
  return {
    ...inputs,
    modelTreeSha256: inputs.checkpoints[0]?.manifest.modelTreeSha256 ?? "",
    product: inputs.engines[0]?.product ?? null,
    tensorParallelSize: inputs.engines[0]?.tensorParallelSize ?? 0,
    checkedAt: new Date().toISOString(),
  };
}

export const provider: pulumi.dynamic.ResourceProvider = {
  async check(_olds: ReplicaAgreementInputs, news: ReplicaAgreementInputs) {
    // During preview a re-discovered host's records are not known yet; the check runs again on up.
    if (JSON.stringify(news).includes(UNKNOWN)) return { inputs: news };
    return { inputs: news, failures: problems(news) };
  },
  async diff(_id: string, olds: ReplicaAgreementOutputs, news: ReplicaAgreementInputs) {
    const changed = JSON.stringify({ e: olds.engines, c: olds.checkpoints }) !== JSON.stringify({ e: news.engines, c: news.checkpoints });
    return { changes: changed, replaces: [] };
  },
  async create(inputs: ReplicaAgreementInputs) {
    return { id: "replica-agreement", outs: agreed(inputs) };
  },
  async update(_id: string, _olds: ReplicaAgreementOutputs, news: ReplicaAgreementInputs) {
    return { outs: agreed(news) };
  },
};
