/**
 * narwhal-check 0.7.0's two warnings (`diagnostics/check/engines.py`), as pure rules: a warning names a
 * configuration risk and changes no gate's outcome, but the run's record must carry it, since it tells
 * the operator how to recover (a whole-wave restart) or what evidence is missing (calibration).
 */
import { canConsume, canProduce } from "./pairs";

export const UNCALIBRATED_WARNING = "first-token deadline has no calibration evidence; run narwhal-check --calibrate-first-token and set engine.first_token_calibration_path";

export interface HostedEngine {
  readonly iid: string;
  /** The host part of the engine's URL: engines with the same one share a host. */
  readonly host: string;
  readonly role: "prefill" | "decode";
  readonly pin?: boolean;
}

/**
 * Whether the rule applies at all: `recovery.engine_restart_policy` individual (the default), a declared
 * contract naming a connector, and vLLM (whose consumers keep KV mapped past a handoff).
 */
export function restartRiskApplies(policy: string, contractConnector: string | null): boolean {
  return policy === "individual" && !!contractConnector;
}

/** The engines whose sidecar must be asked for `launch.peer_release`: those sharing a host. */
export function sharedHostEngines(engines: readonly HostedEngine[]): HostedEngine[] {
  const byHost = new Map<string, HostedEngine[]>();
  for (const e of engines) byHost.set(e.host, [...(byHost.get(e.host) ?? []), e]);
  return [...byHost.values()].filter((es) => es.length > 1).flat();
}

/**
 * `colocated_restart_risk`: a producer sharing a host with a KV consumer whose sidecar does not attest
 * peer release, or with no other producer to probe, cannot be recovered alone. "" when there is none.
 */
export function colocatedRestartRisk(engines: readonly HostedEngine[], released: ReadonlyMap<string, boolean>): string {
  const byHost = new Map<string, HostedEngine[]>();
  for (const e of engines) byHost.set(e.host, [...(byHost.get(e.host) ?? []), e]);
  const unreleased = new Set<string>();
  const unprobed = new Set<string>();
  const pair = (e: HostedEngine) => ({ id: e.iid, role: e.role, pin: e.pin });
  for (const specs of byHost.values()) {
    for (const stopped of specs) {
      if (specs.length < 2 || !canProduce(pair(stopped))) continue;
      for (const peer of specs) {
        if (peer === stopped || !canConsume(pair(peer))) continue;
        if (released.get(peer.iid) !== true) unreleased.add(stopped.iid);
        if (!engines.some((o) => canProduce(pair(o)) && o.iid !== stopped.iid && o.iid !== peer.iid)) unprobed.add(stopped.iid);
      }
    }
  }
  const causes = (
    [
      [unreleased, "share a host with a KV consumer without attested peer release"],
      [unprobed, "share a host with a KV consumer that has no other producer to probe"],
    ] as const
  )
    .filter(([ids]) => ids.size)
    .map(([ids, cause]) => `${[...ids].sort().join(", ")} ${cause}`);
  if (!causes.length) return "";
  return `engines ${causes.join("; ")}; that peer keeps a stopped engine's GPU memory mapped, so recover a crashed engine with a whole-wave restart`;
}
