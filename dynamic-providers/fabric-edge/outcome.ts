/** What both transports' `create` share: the evidence record, a refusal kept as a record first, the outputs. */
import { digestsOf, fingerprintsOf, recordVerdict, verdictFields, type EdgeMeasurement, type RecordVerdict, type Sides } from "../../lib/fabric/edge-outcome";
import { FabricError, type FabricErrorCode } from "../../lib/fabric/errors";
import { FABRIC_DIAGNOSIS } from "../../lib/fabric/matrix";
import type { Step } from "../../lib/ssh/recorded-session";
import { providerEvidence } from "../evidence";
import type { FabricEdgeInputs, FabricEdgeOutputs } from "./schema";

type Recorded = { relativePath: string; digest: string };

export const secretsOf = (i: FabricEdgeInputs) => [i.sourcePrivateKey, i.sourcePassword, i.destinationPrivateKey, i.destinationPassword];

/** The inputs an evidence record names, by key only: the inputs also carry the credentials and the engine's serialised provider. */
export function recordedInputs(i: FabricEdgeInputs, keys: ReadonlyArray<string>): Record<string, unknown> {
  return Object.fromEntries(keys.map((k) => [k, i[k as keyof FabricEdgeInputs] ?? null]));
}

/**
 * An edge's evidence record, for either transport: the inputs it was measured against (by key) with both
 * directions' path digests, every step, and what the transport observed.
 */
export function recordEdge(
  i: FabricEdgeInputs,
  run: { sides: Sides; steps: Step[]; startedAt: string },
  measuredAgainst: ReadonlyArray<string>,
  startingState: Record<string, unknown>,
  observations: Record<string, unknown>,
  verdict: RecordVerdict,
): Promise<Recorded> {
  return providerEvidence(i.stack, secretsOf(i)).record({
    kind: "fabric-edge",
    subject: { kind: "edge", alias: i.edgeId },
    inputs: { ...recordedInputs(i, measuredAgainst), fingerprint: digestsOf(run.sides) } as never,
    startingState: startingState as never,
    commands: run.steps,
    startedAt: run.steps[0]?.startedAt ?? run.startedAt,
    endedAt: new Date().toISOString(),
    observations: observations as never,
    verdict,
    artifacts: [],
  });
}

/**
 * A failed attempt: kept as an invalid record first (the runbook records a blocked gate before anything
 * changes it), then refused with the record's path.
 */
export async function refuseRecorded(i: FabricEdgeInputs, code: FabricErrorCode, reason: string, record: (v: RecordVerdict) => Promise<Recorded>): Promise<never> {
  const evidence = await record({ status: "invalid", reasons: [reason] });
  throw new FabricError(code, `edge ${i.edgeId}: ${reason}. Diagnose ${FABRIC_DIAGNOSIS.join(", ")}; the attempt is recorded in ${evidence.relativePath}`);
}

/** A kept measurement judged, recorded, and returned as the edge's id and outputs. */
export async function createdEdge(
  i: FabricEdgeInputs,
  sides: Sides,
  measurement: EdgeMeasurement,
  record: (v: RecordVerdict) => Promise<Recorded>,
): Promise<{ id: string; outs: FabricEdgeOutputs }> {
  const verdict = verdictFields(measurement, i.requiredGbps);
  const evidence = await record(recordVerdict(verdict));
  const digests = digestsOf(sides);
  const outs: FabricEdgeOutputs = {
    ...i,
    measurement,
    fingerprint: fingerprintsOf(sides),
    measured: digests,
    observed: digests,
    observedProblems: [],
    ...verdict,
    evidence,
  };
  return { id: `${i.source.alias}-to-${i.destination.alias}-${evidence.digest.slice(7, 19)}`, outs };
}
