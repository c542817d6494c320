/**
 * The preflight in narwhal-check's order: reach (+ the colocated-restart warning) → calibration →
 * contract → profile (+ generation) → model → pace → tokenize → produce → consume → slo. A pace,
 * contract, generation or model failure blocks both KV gates (a stalled transfer can take down a
 * healthy peer's engine core). I/O is the observer's; this decides what runs, in what order, and what
 * it means.
 */
import { colocatedRestartRisk, sharedHostEngines, type HostedEngine } from "./restart-risk";
import { judgeCalibrationEvidence, judgeContract, judgeModel, judgePace, judgeProfileGenerations, judgeProfiles, judgeReach, judgeSlo, judgeTokenize, type ContractObservation, type GateProfile, type PaceObservation, type ProfilePolicy } from "./judge";
import { canConsume, canProduce, validationPairs, withRepeats, type PairMode, type Probe } from "./pairs";
import { roundRobin, runProbes, type ScheduleMode } from "./schedule";
import { judgeConsume, judgeProduce, type ProduceObservation, type TransferRecord } from "./transfer";
import { Report, type GateResult } from "./types";

export interface PreflightEngine {
  readonly iid: string;
  readonly role: "prefill" | "decode";
  readonly pin?: boolean;
  /** Engines that share one device (the fleet document's `shared_device.group`) are paced in turn. */
  readonly deviceGroup?: string;
}

export interface PreflightPlan {
  readonly engines: readonly PreflightEngine[];
  readonly model: string;
  readonly slo: { readonly ttftS: number; readonly tpotS: number };
  readonly tokenize: boolean;
  readonly policy: ProfilePolicy;
  /** The saved profile store, by engine id. */
  readonly profiles: ReadonlyMap<string, GateProfile>;
  /** The loaded engine_contract (declared-contract.ts): its fingerprint, version and undeclared fields. */
  readonly contract: { readonly fingerprint: string; readonly engineVersion: string; readonly undeclared?: readonly string[] } | null;
  /** `engine.first_token_calibration_path`; "" when the document names none (narwhal-check warns). */
  readonly calibrationPath?: string;
  /**
   * The engines by host when narwhal-check's colocated-restart rule applies (restartRiskApplies); the
   * observer then asks the sidecars of engines that share a host whether they attest peer release.
   */
  readonly restartRisk?: readonly HostedEngine[];
  readonly pairs: PairMode;
  readonly repeats: number;
  readonly schedule: ScheduleMode;
  readonly timeouts: { readonly firstTokenS: number; readonly requestS: number };
  /** Skip both KV gates (narwhal-check --no-kv). */
  readonly noKv?: boolean;
}

export interface Observer {
  health(iid: string): Promise<boolean>;
  /** The sidecar's `launch.peer_release` is true (false when unreadable, as narwhal-check reads it). */
  peerRelease?(iid: string): Promise<boolean>;
  contract(iid: string): Promise<ContractObservation>;
  generation(iid: string): Promise<{ digest: string } | { error: string }>;
  models(iid: string): Promise<readonly string[] | { error: string }>;
  pace(iid: string): Promise<PaceObservation>;
  tokenize(iid: string): Promise<number | { error: string }>;
  produce(iid: string): Promise<ProduceObservation>;
  transfer(probe: Probe): Promise<TransferRecord>;
}

export interface PreflightOutcome {
  readonly gates: GateResult[];
  readonly transfers: TransferRecord[];
  readonly rounds: number;
}

async function each<T>(ids: readonly string[], f: (iid: string) => Promise<T>): Promise<Map<string, T>> {
  return new Map(await Promise.all(ids.map(async (iid) => [iid, await f(iid)] as const)));
}

/**
 * The pace probes: engines on distinct devices at once, and one at a time within a device, since two
 * prefills on one GPU would measure each other (narwhal-check probes every engine in turn). Observations
 * are keyed in the fleet's order whatever order they finish in.
 */
async function paceInTurnPerDevice(engines: readonly PreflightEngine[], obs: Observer): Promise<Map<string, PaceObservation>> {
  const byDevice = new Map<string, string[]>();
  for (const e of engines) {
    const device = e.deviceGroup ?? `engine:${e.iid}`;
    byDevice.set(device, [...(byDevice.get(device) ?? []), e.iid]);
  }
  const observed = new Map<string, PaceObservation>();
  await Promise.all(
    [...byDevice.values()].map(async (iids) => {
      for (const iid of iids) observed.set(iid, await obs.pace(iid));
    }),
  );
  return new Map(engines.map((e) => [e.iid, observed.get(e.iid)!]));
}

export async function runPreflight(plan: PreflightPlan, obs: Observer): Promise<PreflightOutcome> {
  const rep = new Report();
  const engines = plan.engines;
  const ids = engines.map((e) => e.iid);
  const live = judgeReach(engines, await each(ids, (iid) => obs.health(iid)), rep);
  const liveIds = ids.filter((iid) => live.has(iid));
  if (plan.restartRisk) {
    const shared = sharedHostEngines(plan.restartRisk);
    const released = await each(
      shared.map((e) => e.iid),
      (iid) => obs.peerRelease?.(iid).catch(() => false) ?? Promise.resolve(false),
    );
    const risk = colocatedRestartRisk(plan.restartRisk, released);
    if (risk) rep.warn("reach", risk);
  }
  judgeCalibrationEvidence(plan.calibrationPath ?? "", rep);

  const incompatible = judgeContract(engines, live, plan.contract, await each(liveIds, (iid) => obs.contract(iid)), rep);
  judgeProfiles(engines, plan.profiles, plan.policy, rep);
  const profiledLive = liveIds.filter((iid) => plan.profiles.has(iid));
  const stale = judgeProfileGenerations(engines, plan.profiles, live, await each(profiledLive, (iid) => obs.generation(iid)), rep);
  for (const iid of stale) incompatible.add(iid);
  for (const iid of judgeModel(engines, live, plan.model, await each(liveIds, (iid) => obs.models(iid)), rep)) incompatible.add(iid);

  const pace = await paceInTurnPerDevice(engines.filter((e) => live.has(e.iid)), obs);
  const slow = judgePace(engines, live, pace, stale.size ? null : plan.profiles, rep);
  judgeTokenize(engines, live, plan.tokenize, plan.tokenize ? await each(liveIds, (iid) => obs.tokenize(iid)) : new Map(), rep);

  const transfers: TransferRecord[] = [];
  let rounds = 0;
  const blocked = [...new Set([...slow, ...incompatible])].sort();
  if (plan.noKv) {
    rep.skip("produce", "produce and consume: skipped by --no-kv");
    rep.skip("consume", "produce and consume: skipped by --no-kv");
  } else if (blocked.length) {
    const why = `produce and consume: pre-transfer gate failed on ${blocked.join(", ")}`;
    rep.skip("produce", why);
    rep.skip("consume", why);
  } else {
    const produced = judgeProduce(engines, live, await each(liveIds, (iid) => obs.produce(iid)), rep);
    const tested = engines.filter((e) => live.has(e.iid) && produced.has(e.iid));
    if (tested.length < 2) rep.skip("consume", "consume: fewer than two engines produced a handoff");
    else {
      const pairEngines = tested.map((e) => ({ id: e.iid, role: e.role, pin: e.pin }));
      const excluded = [...pairEngines.filter((e) => !canConsume(e)).map((e) => e.id).sort(), ...pairEngines.filter((e) => !canProduce(e)).map((e) => e.id).sort()];
      const pairs = validationPairs(pairEngines, plan.pairs);
      const probes = withRepeats(pairs, plan.repeats);
      const ran = await runProbes(probes, plan.schedule, (p) => obs.transfer(p));
      transfers.push(...ran.map((r) => r.result));
      rounds = plan.schedule === "sequential" ? probes.length : roundRobin(probes).length;
      judgeConsume(pairs, transfers, excluded, plan.timeouts, rep);
    }
  }
  judgeSlo(engines, plan.profiles, plan.slo, rep);
  return { gates: rep.results(), transfers, rounds };
}
