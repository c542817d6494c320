/**
 * Rolling changes: when a change to the rolling settings (./settings.ts) reaches more than one engine,
 * each `up` moves one engine onto its new settings and keeps the others on the settings they run, as the
 * stack's last deployment recorded them (its `rollout` output). One engine per wave because narwhal 0.7.0
 * drains one engine at a time and reads its profile store only when it starts: every wave is its own
 * drain, restart, proof (generation, capture, attestation, profile, preflight) and router swap that
 * readmits it, and an `up` is the unit that runs that chain once. A wave whose engine fails a gate fails
 * its `up`, which leaves the recorded outputs as they were: the next `up` takes the same wave again, and
 * the engines not yet rolled never stopped serving.
 */
import { z } from "zod";
import type { EngineSpec, FleetSpec } from "../config/types";
import { FIXED_PARTS, ROLLING_KEYS, fixedLaunchDigests, rollingSettings, sameSettings, settingsChange, type FixedPart, type RollingSettings } from "./settings";

/** The stack output `rollout`: what every engine runs after this `up`, and the rollout's progress. */
export interface RolloutRecord {
  /** `rolling` while engines remain on their previous settings for later ups; else `settled`. */
  readonly status: "settled" | "rolling";
  /** The engines this `up` moves onto their new settings as a rolling wave (none when nothing rolls). */
  readonly wave: ReadonlyArray<string>;
  /** The engines this `up` keeps on their previous settings, each for a later `up`. */
  readonly pending: ReadonlyArray<string>;
  readonly reason: string;
  /** Per engine, the settings it runs after this `up`, which its plan launches (`onTarget`: the config's own), and per part the digest of the rest of its launch config. */
  readonly engines: Readonly<Record<string, RecordedEngine>>;
  /**
   * Per host, the launch policy digest its discovery ran against (lib/fleet/host-plan.ts): while the rollout
   * holds an engine of the host, the recorded one, so the host is discovered again once, with its last engine.
   */
  readonly hosts: Readonly<Record<string, { readonly policyDigest: string }>>;
}

export interface RecordedEngine {
  readonly settings: RollingSettings;
  /**
   * `settings.engineEnv`'s names in the order the engine's command sets them: the engine hands a stack's
   * outputs back with an object's keys in an order of its own, and a held engine's command must not change.
   */
  readonly envOrder?: ReadonlyArray<string>;
  readonly fixed: Readonly<Record<FixedPart, string>>;
  readonly onTarget: boolean;
}

/** What the stack's last successful deployment recorded, as far as a rollout needs it. */
export interface RecordedDeployment {
  readonly rollout?: {
    readonly engines: Readonly<Record<string, Pick<RecordedEngine, "settings" | "fixed">>>;
    readonly hosts?: RolloutRecord["hosts"];
    readonly status?: RolloutRecord["status"];
  };
  /** The `routerRestartPolicy` output. */
  readonly restartPolicy?: { readonly policy: string; readonly reason: string };
  /** The `restarts` output: per KV component, who restarts with one of its engines. */
  readonly restartScopes?: ReadonlyArray<{ readonly engines: ReadonlyArray<string>; readonly kind: string; readonly reason: string }>;
}

export interface RolloutDecision {
  /** What every engine runs after this `up`; `hosts` is the policy digest each host's discovery runs against. */
  readonly record: RolloutRecord;
  /** The line the preview and the `up` print when the change rolls, or is refused a roll it would need. */
  readonly message?: string;
  /** Whether this up leaves a role without a serving engine while it restarts (its line is then a warning). */
  readonly outage?: boolean;
}

/** `policyDigests`: per host, the digest of the launch policy its engines take from the config. */
export function decideRollout(spec: FleetSpec, recorded: RecordedDeployment, policyDigests: Readonly<Record<string, string>>): RolloutDecision {
  const fixedOf = fixedLaunchDigests(spec);
  const desired = new Map(spec.engines.map((e) => [e.id, { settings: rollingSettings(spec, e), fixed: fixedOf(e) }]));
  const applied = recorded.rollout?.engines ?? {};
  const changed = spec.engines.filter((e) => applied[e.id] && !sameSettings(applied[e.id].settings, desired.get(e.id)!.settings));
  const decided = (wave: string[], pending: string[], reason: string, message?: string): RolloutDecision => {
    const kept = recorded.rollout?.hosts ?? {};
    const holds = (alias: string) => spec.engines.some((e) => e.host === alias && pending.includes(e.id));
    const hosts = Object.fromEntries(Object.entries(policyDigests).map(([alias, digest]) => [alias, { policyDigest: holds(alias) && kept[alias] ? kept[alias].policyDigest : digest }]));
    const engines = Object.fromEntries(
      spec.engines.map((e) => {
        const held = pending.includes(e.id);
        const settings = held ? applied[e.id].settings : desired.get(e.id)!.settings;
        return [e.id, { settings, ...(settings.engineEnv ? { envOrder: Object.keys(settings.engineEnv) } : {}), fixed: desired.get(e.id)!.fixed, onTarget: !held }];
      }),
    );
    const status = pending.length > 0 ? "rolling" : "settled";
    return { record: { status, wave, pending, reason, engines, hosts }, ...(message ? { message } : {}) };
  };
  const atOnce = (reason: string, message?: string): RolloutDecision => decided([], [], reason, message);
  const change = changed.length > 0 ? settingsChange(applied[changed[0].id].settings, desired.get(changed[0].id)!.settings) : "";

  // A change beyond the rolling settings rolls nothing: every engine it reaches restarts in this up.
  const fixedChanged = spec.engines.flatMap((e) => {
    const parts = applied[e.id] ? (Object.keys(FIXED_PARTS) as FixedPart[]).filter((p) => applied[e.id].fixed[p] !== desired.get(e.id)!.fixed[p]) : [];
    return parts.length > 0 ? [{ id: e.id, parts }] : [];
  });
  if (fixedChanged.length > 0) {
    const reached = spec.engines.filter((e) => changed.includes(e) || fixedChanged.some((f) => f.id === e.id)).map((e) => e.id);
    const parts = [...new Set(fixedChanged.flatMap((f) => f.parts))].map((p) => FIXED_PARTS[p]).join("; ");
    const why = `the change reaches ${parts} (${fixedChanged.map((f) => f.id).join(", ")}): only ${ROLLING_KEYS.join(", ")} roll`;
    if (reached.length < 2) return atOnce(`${reached.join(", ")} restarts: ${why}`);
    const every = reached.length === spec.engines.length ? ": no engine serves from their stop until the router is swapped onto them" : "";
    return {
      ...atOnce(`${reached.join(", ")} restart at once: ${why}`, `rollout: nothing rolls: ${reached.join(", ")} restart at once in this up, because ${why}${every}`),
      ...(every ? { outage: true } : {}),
    };
  }
  if (changed.length === 0) return atOnce("no engine's rolling settings changed");
  if (changed.length === 1) {
    const [only] = changed;
    // The last engine of a rollout, alone in its role: the rollout's consent rule holds for it too.
    if (alone(spec, only) && recorded.rollout?.status === "rolling" && !spec.rollout.allowRoleOutage) throw new RolloutRoleOutage(spec, [only]);
    return {
      ...atOnce(`one engine's settings changed (${only.id}: ${change}): it restarts alone`, `rollout: ${only.id} restarts onto its new settings (${change}); ${rest(spec, only)}`),
      ...(alone(spec, only) ? { outage: true } : {}),
    };
  }
  const ids = changed.map((e) => e.id);
  const whole = (why: string) => atOnce(`${ids.join(", ")} restart at once: ${why}`, `rollout: nothing rolls: ${ids.join(", ")} restart at once in this up, because ${why}`);

  if (recorded.restartPolicy?.policy === "whole_wave") return whole(`narwhal's restart policy is whole_wave (${recorded.restartPolicy.reason})`);
  const component = recorded.restartScopes?.find((s) => s.kind === "component" && s.engines.some((id) => ids.includes(id)));
  if (component) return whole(`their KV component (${component.engines.join(", ")}) restarts whole: ${component.reason}`);

  // One engine per wave, and first one whose role keeps another engine serving meanwhile; one alone in
  // its role only with the operator's consent.
  const lone = changed.filter((e) => alone(spec, e));
  const next = changed.find((e) => !alone(spec, e)) ?? (spec.rollout.allowRoleOutage ? changed[0] : undefined);
  if (!next) throw new RolloutRoleOutage(spec, lone);
  const stops = lone.length > 0 && !spec.rollout.allowRoleOutage ? ` The rollout stops before ${lone.map((e) => e.id).join(", ")}, alone in ${lone.length === 1 ? "its role" : "their roles"}, unless rollout.allowRoleOutage is set.` : "";
  const pending = ids.filter((id) => id !== next.id);
  return {
    ...decided(
      [next.id],
      pending,
      `rolling change (${change}): one engine per up, ${next.id} in this one`,
      `rollout: rolling change (${change}) over ${ids.length} engines still on their previous settings, one per up: ` +
        `this up restarts ${next.id}, drained first and readmitted once proven; ${pending.join(", ")} ${pending.length === 1 ? "keeps its" : "keep their"} running settings ` +
        `until a later up (run \`pulumi up\` again once this one converges). ${rest(spec, next)}.${stops}`,
    ),
    ...(alone(spec, next) ? { outage: true } : {}),
  };
}

/** A rollout that reached engines each alone in its role, without `rollout.allowRoleOutage`: it stops before them. */
export class RolloutRoleOutage extends Error {
  /** Stable code, the same in every copy of this module (tools/domain-errors.js ends the run with the message alone). */
  readonly code = "NARWHAL_ROLLOUT_ROLE_OUTAGE" as const;
  constructor(spec: FleetSpec, engines: ReadonlyArray<EngineSpec>) {
    const which = engines.map((e) => `${e.id} is the only ${e.role} engine`).join(", ");
    const others = spec.engines.filter((e) => !engines.includes(e)).map((e) => e.id);
    const roles = [...new Set(engines.map((e) => e.role))].join(" or ");
    super(
      `rollout: stopped before ${engines.map((e) => e.id).join(", ")}: ${which}, so restarting ${engines.length === 1 ? "it" : "them"} leaves that role with no engine to serve until readmitted. ` +
        `Add another ${roles} engine (engines[].role), or set narwhal-fleet:rollout '{"allowRoleOutage": true}' to restart ${engines.length === 1 ? "it" : "them"} anyway. ` +
        `Nothing was touched${others.length ? `; ${others.join(", ")} keep${others.length === 1 ? "s" : ""} serving` : ""}.`,
    );
    this.name = "RolloutRoleOutage";
  }
}

const roleMates = (spec: FleetSpec, engine: EngineSpec) => spec.engines.filter((o) => o.id !== engine.id && o.role === engine.role).map((o) => o.id);
const alone = (spec: FleetSpec, engine: EngineSpec) => roleMates(spec, engine).length === 0;

/** Whether the restarting engine's role keeps an engine serving meanwhile. */
function rest(spec: FleetSpec, engine: EngineSpec): string {
  const others = roleMates(spec, engine);
  return others.length > 0
    ? `${others.join(", ")} serve${others.length === 1 ? "s" : ""} the ${engine.role} role meanwhile`
    : `${engine.id} is the only ${engine.role} engine: that role has no engine to serve while it restarts`;
}

const RecordedEngineSchema = z.object({
  settings: z.object({
    maxModelLen: z.number(),
    maxNumSeqs: z.number(),
    gpuMemoryUtilization: z.number(),
    engineArgs: z.array(z.string()).optional(),
    engineEnv: z.record(z.string(), z.string()).optional(),
  }),
  envOrder: z.array(z.string()).optional(),
  fixed: z.object({ runtime: z.string(), launch: z.string(), model: z.string(), placement: z.string() }),
});
const RecordedHostSchema = z.object({ policyDigest: z.string() });
const RestartPolicySchema = z.object({ policy: z.string(), reason: z.string().default("") });
const RestartScopesSchema = z.array(z.object({ engines: z.array(z.string()), kind: z.string(), reason: z.string().default("") }));

/** Each entry of a record that parses, in a record of its own; the rest counts as unrecorded. */
function entriesOf<T>(value: unknown, schema: z.ZodType<T>): Record<string, T> {
  const entries = typeof value === "object" && value !== null ? Object.entries(value) : [];
  return Object.fromEntries(entries.flatMap(([key, entry]) => {
    const parsed = schema.safeParse(entry);
    return parsed.success ? [[key, parsed.data]] : [];
  }));
}

/** `engineEnv` in the order its command set it (`envOrder`), whatever order the engine handed the keys back in. */
function inCommandOrder({ settings, envOrder = [] }: z.output<typeof RecordedEngineSchema>): RollingSettings {
  const env = settings.engineEnv;
  if (!env) return settings;
  const names = [...envOrder.filter((k) => k in env), ...Object.keys(env).filter((k) => !envOrder.includes(k))];
  return { ...settings, engineEnv: Object.fromEntries(names.map((k) => [k, env[k]])) };
}

/** The recorded deployment from the stack's outputs as the engine reads them; anything malformed counts as unrecorded. */
export function recordedDeployment(outputs: Readonly<Record<string, unknown>> | undefined): RecordedDeployment {
  const rollout = (outputs?.rollout ?? {}) as Record<string, unknown>;
  const engines = Object.fromEntries(Object.entries(entriesOf(rollout.engines, RecordedEngineSchema)).map(([id, e]) => [id, { settings: inCommandOrder(e), fixed: e.fixed }]));
  const status = z.enum(["rolling", "settled"]).safeParse(rollout.status);
  const policy = RestartPolicySchema.safeParse(outputs?.routerRestartPolicy);
  const scopes = RestartScopesSchema.safeParse(outputs?.restarts);
  return {
    rollout: { engines, hosts: entriesOf(rollout.hosts, RecordedHostSchema), ...(status.success ? { status: status.data } : {}) },
    ...(policy.success ? { restartPolicy: policy.data } : {}),
    ...(scopes.success ? { restartScopes: scopes.data } : {}),
  };
}
