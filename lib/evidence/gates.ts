/**
 * The runbook's seven gates and which record kinds belong to each (design.md §3, one arrow per gate).
 * The deployment record is kept per gate, so every kind the fleet writes has to land in exactly one.
 */

/** A gate of the deployment sequence. */
export type GateId = "A" | "B" | "C" | "D" | "E" | "F" | "G";

export interface GateInfo {
  readonly gate: GateId;
  readonly title: string;
  /** Record kinds written while this gate runs. */
  readonly kinds: readonly string[];
}

/** In runbook order; the deployment record lists gates in this order. */
export const GATES: readonly GateInfo[] = [
  { gate: "A", title: "Freeze inputs and discover the real deployment", kinds: ["discovery", "launch-plan", "replica-agreement", "deployment-config"] },
  { gate: "B", title: "Package and install the approved revision", kinds: ["install"] },
  { gate: "C", title: "Validate and start every engine", kinds: ["image-check", "generation", "cache-capture"] },
  { gate: "D", title: "Prove the transfer fabric against the serving cache", kinds: ["fabric-edge", "fabric-matrix"] },
  { gate: "E", title: "Attest the live engine processes", kinds: ["attestation"] },
  { gate: "F", title: "Profile once and run the live KV contract", kinds: ["profile", "profile-store", "preflight", "calibration"] },
  { gate: "G", title: "Start the service and validate capacity through the private path", kinds: ["router", "observability", "load-trial"] },
];

const BY_KIND = new Map(GATES.flatMap((g) => g.kinds.map((k) => [k, g.gate] as const)));

/** The gate a record kind belongs to; undefined for a kind no gate claims (listed apart, never dropped). */
export function gateOfKind(kind: string): GateId | undefined {
  return BY_KIND.get(kind);
}
