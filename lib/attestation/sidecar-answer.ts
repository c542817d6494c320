/**
 * What the Attestation provider makes of its sidecar's answers: the detail of a refusal, the process
 * clock of `/v1/process` against the proved engine, and what a refresh's `/v1/attestation` shows.
 */
import type { ProcessIdentity } from "../engine/generation";

/**
 * How far the sidecar's clock for the engine's pid (from /proc) may sit from the engine's own
 * `process_start_time_seconds`: equal for vLLM, whose Prometheus client reads the same /proc entry, a
 * moment apart for a runtime that stamps its start itself. A reused pid would be minutes or days off.
 */
export const PROCESS_CLOCK_TOLERANCE_S = 5;

/** A sidecar refusal's `detail`, or the body itself when it is not JSON. */
export function detailOf(body: string): string {
  try {
    const d = (JSON.parse(body) as { detail?: unknown }).detail;
    if (typeof d === "string") return d;
  } catch {
    // not JSON: the body itself is the detail
  }
  return body.trim().slice(0, 200) || "(empty body)";
}

/** `/v1/process`'s `process_start_time_seconds`, or null when the answer has none. */
export function processClockOf(status: number, body: string): number | null {
  if (status !== 200) return null;
  try {
    const value = (JSON.parse(body) as { process_start_time_seconds?: unknown }).process_start_time_seconds;
    return typeof value === "number" && Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}

/** Why the sidecar's process clock is not the proved engine's; undefined when it is. */
export function clockProblem(identity: ProcessIdentity, processStartTime: number, clock: number): string | undefined {
  if (identity.containerId !== undefined) {
    // A container starts before the engine process inside it.
    return clock <= processStartTime + PROCESS_CLOCK_TOLERANCE_S ? undefined : `/v1/process says container ${identity.containerId.slice(0, 12)} started at ${clock}, after the engine process (${processStartTime})`;
  }
  return Math.abs(clock - processStartTime) <= PROCESS_CLOCK_TOLERANCE_S
    ? undefined
    : `/v1/process says pid ${identity.pid} started at ${clock}, the proved engine process at ${processStartTime}: the sidecar watches another process`;
}

/** What a refresh saw: the live attestation digest (or "none"), its state against the recorded one, and why. */
export interface SidecarObservation {
  observedAttestation: string;
  observedState: "attested" | "engine-changed" | "changed" | "unreachable" | "unreadable";
  observedDetail: string;
}

/** A refresh's reading of `/v1/attestation` against the recorded digest. */
export function observedAttestation(path: string, status: number, body: string, recorded: string): SidecarObservation {
  const none = (observedState: SidecarObservation["observedState"], observedDetail: string): SidecarObservation => ({ observedAttestation: "none", observedState, observedDetail });
  if (status === 503) return none("engine-changed", `${path} answered 503: ${detailOf(body)}`);
  if (status !== 200) return none("unreadable", `${path} answered HTTP ${status}`);
  let digest: unknown;
  try {
    digest = (JSON.parse(body) as { attestation_digest?: unknown }).attestation_digest;
  } catch {
    return none("unreadable", `${path} did not answer JSON`);
  }
  if (typeof digest !== "string") return none("unreadable", `${path} has no attestation_digest`);
  return digest === recorded
    ? { observedAttestation: digest, observedState: "attested", observedDetail: "the sidecar serves the recorded attestation" }
    : { observedAttestation: digest, observedState: "changed", observedDetail: `the sidecar serves ${digest}, recorded ${recorded}` };
}
