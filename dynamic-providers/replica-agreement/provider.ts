/**
 * Gate A's fleet-wide agreement: every engine host holds the same checkpoint snapshot, and all
 * replicas share one accelerator product and TP shape. A check, not a measurement: it reads only the
 * discovery records it is given, and failing it stops the deployment before any engine starts.
 */
import type * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { agreement, agreementRecord, disagreements, REPLICA_AGREEMENT_KIND as KIND, type HostCheckpoint, type ListedRefusal } from "../../lib/checkpoint/agreement";
import type { ReplicaShape } from "../../lib/launch/policy";
import { hasUnknown } from "../../lib/unknown";
import { schemaCheck } from "../evidence-provider";
import { across, inOrder } from "../../lib/input-rules";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import { stackEvidenceStore } from "../../lib/evidence/stack-store";

const fields = z.object({
  /** Each engine as discovery resolved it: enough to check that replicas agree. */
  engines: z.custom<ReplicaShape[]>(),
  /** The checkpoint manifest discovery recorded on each engine host. */
  checkpoints: z.custom<HostCheckpoint[]>(),
  /** When set, a disagreement is kept in runs/<stack>/evidence before it is refused, and so is the agreement that follows it. */
  stack: z.string({ error: "stack must be the stack's name" }).optional(),
});

export type ReplicaAgreementInputs = z.infer<typeof fields>;
export type ReplicaAgreementOutputs = ReplicaAgreementInputs & ReturnType<typeof agreement>;

/**
 * One checkpoint snapshot, one accelerator product and one TP shape, judged once every record is known:
 * during preview a re-discovered host's records are not, and the check runs again on up.
 */
const agreementInputs = inOrder(
  fields,
  across((news, refuse) => {
    if (hasUnknown(news)) return;
    for (const d of disagreements(news.engines as ReplicaShape[], news.checkpoints as HostCheckpoint[])) refuse(d.property, d.message);
  }),
);

/**
 * The check's own record (lib/checkpoint/agreement.ts): the runbook keeps a failed gate's evidence, so a
 * disagreement is kept as a `fail` record before it is refused, and the agreement that follows is kept as
 * a `pass` listing the refusals it ends. The check runs on a preview too; a preview that sees replicas
 * disagree has run the check, and says so.
 */
async function keepJudgement(news: ReplicaAgreementInputs, refusals: ListedRefusal[] = []): Promise<string> {
  const evidence = providerEvidence(news.stack!);
  const manifests = await evidence.artifact(KIND, "checkpoints.json", JSON.stringify(news.checkpoints, null, 2));
  return (await evidence.record(agreementRecord(news.stack!, news.engines, news.checkpoints, manifests, refusals))).relativePath;
}

/**
 * The stack's refusals since its last agreement, oldest first: the replica-agreement records after the
 * newest `pass`, in the order the deployment record sorts steps (start time, then path). Empty when the
 * newest record is an agreement, or when there is none.
 */
async function refusalsSinceAgreement(stack: string): Promise<ListedRefusal[]> {
  const store = stackEvidenceStore(stack);
  const own = [];
  for (const listed of await store.list(KIND)) {
    const r = await store.read(listed.relativePath, listed.digest);
    if (r.subject.kind === "fleet" && r.subject.alias === stack) own.push({ listed, r });
  }
  own.sort((a, b) => (a.r.startedAt !== b.r.startedAt ? (a.r.startedAt < b.r.startedAt ? -1 : 1) : a.listed.relativePath < b.listed.relativePath ? -1 : 1));
  let from = own.length;
  while (from > 0 && own[from - 1].r.verdict.status === "fail") from--;
  return own.slice(from).map(({ listed, r }) => ({ record: listed.relativePath, digest: listed.digest, verdict: "fail", reasons: r.verdict.reasons, startedAt: r.startedAt, endedAt: r.endedAt }));
}

const checkAgreement = schemaCheck<ReplicaAgreementInputs>(agreementInputs);

export const provider: pulumi.dynamic.ResourceProvider = {
  /**
   * Judges the replicas, and records a refusal, and the agreement that follows one. Both are written here
   * rather than in create or update: a refusal at check means neither runs, and replicas may agree again
   * with inputs this resource already holds (a host's checkpoint put back), when no update runs either.
   */
  async check(olds: ReplicaAgreementInputs, news: ReplicaAgreementInputs) {
    const checked = await checkAgreement(olds, news);
    const failures = checked.failures ?? [];
    if (typeof news.stack !== "string" || hasUnknown(news)) return checked;
    if (failures.length === 0) {
      // A store that cannot be read or written here holds the check up nowhere: the refusal stays the
      // newest record, and the next check writes the agreement.
      await refusalsSinceAgreement(news.stack)
        .then((refusals) => (refusals.length ? keepJudgement(news, refusals) : undefined))
        .catch(() => undefined);
      return checked;
    }
    const kept = await keepJudgement(news).then(
      (path) => `the failed attempt is kept as ${path}`,
      (err: Error) => `the failed attempt could not be recorded: ${err.message}`,
    );
    return { ...checked, failures: failures.map((f, n) => (n === failures.length - 1 ? { ...f, reason: `${f.reason}\n${kept}` } : f)) };
  },
  async diff(_id: string, olds: ReplicaAgreementOutputs, news: ReplicaAgreementInputs) {
    const changed = JSON.stringify({ e: olds.engines, c: olds.checkpoints }) !== JSON.stringify({ e: news.engines, c: news.checkpoints });
    return { changes: changed, replaces: [] };
  },
  async create(inputs: ReplicaAgreementInputs) {
    return { id: "replica-agreement", outs: { ...inputs, ...agreement(inputs.engines, inputs.checkpoints) } };
  },
  async update(_id: string, _olds: ReplicaAgreementOutputs, news: ReplicaAgreementInputs) {
    return { outs: { ...news, ...agreement(news.engines, news.checkpoints) } };
  },
};
