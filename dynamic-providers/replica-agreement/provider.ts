/**
 * Gate A's fleet-wide agreement: every engine host holds the same checkpoint snapshot, and all
 * replicas share one accelerator product and TP shape. A check, not a measurement: it reads only the
 * discovery records it is given, and failing it stops the deployment before any engine starts.
 */
import type * as pulumi from "@pulumi/pulumi";
import { compareReplicas, replicaDifferenceMessage } from "../../lib/checkpoint";
import { checkReplicaShapes } from "../../lib/launch/policy";
import { hasUnknown } from "../diff";
import { schemaCheck } from "../evidence-provider";
import { across } from "../input-rules";
import type { ReplicaAgreementInputs, ReplicaAgreementOutputs } from "./types";

/**
 * One checkpoint snapshot, one accelerator product and one TP shape, judged once every record is known:
 * during preview a re-discovered host's records are not, and the check runs again on up.
 */
const agreementInputs = across((news, refuse) => {
  if (hasUnknown(news)) return;
  const difference = compareReplicas(news.checkpoints as ReplicaAgreementInputs["checkpoints"]);
  if (difference) refuse("checkpoints", replicaDifferenceMessage(difference));
  for (const issue of checkReplicaShapes(news.engines as ReplicaAgreementInputs["engines"])) refuse("engines", `${issue.path}: ${issue.message}`);
});

function agreed(inputs: ReplicaAgreementInputs): ReplicaAgreementOutputs {
  return {
    ...inputs,
    modelTreeSha256: inputs.checkpoints[0]?.manifest.modelTreeSha256 ?? "",
    product: inputs.engines[0]?.product ?? null,
    tensorParallelSize: inputs.engines[0]?.tensorParallelSize ?? 0,
    checkedAt: new Date().toISOString(),
  };
}

const checkAgreement = schemaCheck<ReplicaAgreementInputs>(agreementInputs);

export const provider: pulumi.dynamic.ResourceProvider = {
  // A disagreement is not kept as a record yet: this resource writes none when replicas agree, so a kept
  // refusal would stay the newest replica-agreement record, and fail Gate A, after they agree again.
  check: checkAgreement,
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
