/** What both transports' `create` share: the verdict from a kept measurement, the fingerprints, the secrets. */
import { verdictDetail } from "../../lib/fabric/budget";
import type { PathFingerprint } from "../../lib/fabric/path";
import type { Sides } from "./measure";
import type { EdgeMeasurement, FabricEdgeInputs, FabricEdgeOutputs } from "./types";

/** The edge's verdict against `requiredGbps`; a measurement that carries its own invalidity stays invalid. */
export function verdictFields(m: EdgeMeasurement, requiredGbps: number): Pick<FabricEdgeOutputs, "verdict" | "verdictReason" | "marginGbps"> {
  if (m.invalidReason) return { verdict: "invalid", verdictReason: m.invalidReason, marginGbps: null };
  const v = verdictDetail({ gbps: m.gbps, samples: m.samplesGbps }, { requiredGbps });
  return { verdict: v.verdict, verdictReason: v.reason, marginGbps: v.marginGbps };
}

/** The evidence record's status for a verdict. */
export function recordVerdict(v: Pick<FabricEdgeOutputs, "verdict" | "verdictReason">): { status: "pass" | "fail" | "invalid"; reasons: string[] } {
  return { status: v.verdict === "met" ? "pass" : v.verdict === "below" ? "fail" : "invalid", reasons: v.verdict === "met" ? [] : [v.verdictReason] };
}

/** Only called once the measurement refused paths that could not be fingerprinted. */
export function fingerprintsOf(sides: Sides): FabricEdgeOutputs["fingerprint"] {
  const ok = (f: PathFingerprint) => (f as Extract<PathFingerprint, { ok: true }>).fingerprint;
  return { forward: ok(sides.forward), return: ok(sides.back) };
}

export const secretsOf = (i: FabricEdgeInputs) => [i.sourcePrivateKey, i.sourcePassword, i.destinationPrivateKey, i.destinationPassword];

/** The inputs an evidence record names, by key only: the inputs also carry the credentials and the engine's serialised provider. */
export function recordedInputs(i: FabricEdgeInputs, keys: ReadonlyArray<string>): Record<string, unknown> {
  return Object.fromEntries(keys.map((k) => [k, i[k as keyof FabricEdgeInputs] ?? null]));
}
