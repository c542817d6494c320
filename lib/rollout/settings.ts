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

export const ROLLING_KEYS = ["maxModelLen", "maxNumSeqs", "gpuMemoryUtilization", "engineArgs", "engineEnv"] as const satisfies ReadonlyArray<keyof RollingSettings>;

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

/** The rest of an engine's launch config, in parts a preview can name. */
export const FIXED_PARTS = {
  runtime: "the runtime (image, vLLM command)",
  launch: "other launch settings (dtype, KV cache dtype, block size, transport, ...)",
  model: "the model",
  placement: "the engine's host, ports or GPUs",
} as const;
export type FixedPart = keyof typeof FIXED_PARTS;

/**
 * Per part, the digest of what else the engine's plan is made from in the config: the runtime without its
 * deadlines; the fleet's launch policy and the engine's overrides without the rolling keys (and without
 * `slo`, which judges, not launches); the model; where the engine runs. The fleet-wide parts are hashed
 * once, whatever the fleet's size: call it once and apply the result to each engine.
 */
export function fixedLaunchDigests(spec: FleetSpec): (engine: EngineSpec) => Record<FixedPart, string> {
  const { deadlinesS: _deadlines, ...runtime } = spec.runtime;
  const fleet = { runtime: sha256Json(runtime), launch: sha256Json(omitRolling(spec.launch)), model: sha256Json(spec.model) };
  return (engine) => {
    const { slo: _slo, ...overrides } = engine.overrides ?? {};
    return {
      runtime: fleet.runtime,
      launch: sha256Json({ launch: fleet.launch, overrides: omitRolling(overrides) }),
      model: fleet.model,
      placement: sha256Json({ host: engine.host, port: engine.port, nixlPort: engine.nixlPort, gpuIds: engine.gpuIds ?? null, transferPortRange: engine.transferPortRange ?? null }),
    };
  };
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
