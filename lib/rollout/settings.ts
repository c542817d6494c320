/**
 * What a rolling change may change: the launch settings an engine may hold apart from the rest of its
 * fleet. They are the per-engine overrides narwhal's engine contract does not hold (lib/attestation/
 * contract.ts), so an engine on new settings is validated against the same contract as the engines still
 * on the old ones and both serve side by side. Everything else an engine's plan is made from is its
 * `fixed` part: a change there (an image, a dtype, a transport) cannot roll one engine at a time.
 */
import type { EngineSpec, FleetSpec } from "../config/types";
import { sha256Json } from "../digest";

export interface RollingSettings {
  readonly maxModelLen: number;
  readonly maxNumSeqs: number;
  readonly gpuMemoryUtilization: number;
  readonly engineArgs?: ReadonlyArray<string>;
  readonly engineEnv?: Readonly<Record<string, string>>;
}

const ROLLING_KEYS = ["maxModelLen", "maxNumSeqs", "gpuMemoryUtilization", "engineArgs", "engineEnv"] as const satisfies ReadonlyArray<keyof RollingSettings>;

/** One engine's rolling settings as its config resolves them: its override, else the fleet's `launch`. */
export function rollingSettings(spec: FleetSpec, engine: EngineSpec): RollingSettings {
  const o = engine.overrides ?? {};
  const engineEnv = { ...(spec.launch.engineEnv ?? {}), ...(o.engineEnv ?? {}) };
  const engineArgs = o.engineArgs ?? spec.launch.engineArgs;
  return {
    maxModelLen: o.maxModelLen ?? spec.launch.maxModelLen,
    maxNumSeqs: o.maxNumSeqs ?? spec.launch.maxNumSeqs,
    gpuMemoryUtilization: o.gpuMemoryUtilization ?? spec.launch.gpuMemoryUtilization,
    ...(engineArgs ? { engineArgs } : {}),
    ...(Object.keys(engineEnv).length > 0 ? { engineEnv } : {}),
  };
}

/**
 * The digest of everything else the engine's plan is made from in the config: the fleet's launch policy
 * and the engine's own entry without the rolling keys (and without `slo`, which judges, not launches), the
 * runtime without its deadlines, and the model.
 */
export function fixedLaunchDigest(spec: FleetSpec, engine: EngineSpec): string {
  const { overrides, index: _index, ...entry } = engine;
  const { slo: _slo, ...launchOverrides } = overrides ?? {};
  const { deadlinesS: _deadlines, ...runtime } = spec.runtime;
  return sha256Json({ launch: omitRolling(spec.launch), overrides: omitRolling(launchOverrides), entry, runtime, model: spec.model });
}

export function sameSettings(a: RollingSettings, b: RollingSettings): boolean {
  return sha256Json(a) === sha256Json(b);
}

/** `maxNumSeqs 64 → 128`: what differs between two settings, for the preview's line. */
export function settingsChange(from: RollingSettings, to: RollingSettings): string {
  return ROLLING_KEYS.filter((k) => sha256Json(from[k] ?? null) !== sha256Json(to[k] ?? null))
    .map((k) => `${k} ${JSON.stringify(from[k] ?? null)} → ${JSON.stringify(to[k] ?? null)}`)
    .join(", ");
}

function omitRolling<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([k]) => !(ROLLING_KEYS as ReadonlyArray<string>).includes(k))) as Partial<T>;
}
