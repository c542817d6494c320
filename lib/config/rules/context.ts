/** What every cross-field rule sees: each section as far as it parsed, and a way to report. */
import type { z } from "zod";
import type * as s from "../schema/fleet-config";
import type { PathSegment } from "../errors";
import { didYouMean } from "../describe";

/** A parsed object, field by field: a field that failed is absent from `value` and named in `failed`. */
export interface Section<T> {
  readonly value: Partial<T>;
  readonly failed: ReadonlySet<string>;
}

export type HostFields = z.output<typeof s.HostSchema>;
export type EngineFields = z.output<ReturnType<typeof s.engineSchema>>;

export interface RuleInput {
  readonly hosts: ReadonlyArray<Section<HostFields>>;
  readonly engines: ReadonlyArray<Section<EngineFields>>;
  /** `engines` is a list and every engine parsed: rules over the whole set (roles, TP shape) need this. */
  readonly enginesComplete: boolean;
  /**
   * Host aliases and engine ids as written, parsed or not (index-aligned). References are checked
   * against these, so one host with a bad port does not also make every engine on it "unknown".
   */
  readonly rawAliases: ReadonlyArray<string | undefined>;
  /** `hosts` is a list; when it is missing, references to hosts are not checked (nothing to check against). */
  readonly hostsListed: boolean;
  readonly rawEngineIds: ReadonlyArray<string | undefined>;
  /**
   * The user wrote a value at `path` (as opposed to a default filling it in): a clash between a written
   * and a defaulted value is reported at the written one, the field the user can see and change.
   */
  readonly written: (path: readonly PathSegment[]) => boolean;
  readonly model: Section<z.output<typeof s.ModelSchema>>;
  readonly runtime: Section<z.output<typeof s.RuntimeSchema>>;
  readonly launch: Section<z.output<typeof s.LaunchSchema>>;
  readonly slo: Section<z.output<typeof s.SloSchema>>;
  readonly router: Section<z.output<typeof s.RouterSchema>>;
  readonly observability: Section<z.output<typeof s.ObservabilitySchema>>;
  readonly ssh: Section<z.output<typeof s.SshSchema>>;
  readonly fabric: Section<z.output<typeof s.FabricSchema>>;
  readonly profiling: Section<z.output<typeof s.ProfilingSchema>>;
  readonly attestation: Section<z.output<typeof s.AttestationSchema>>;
  readonly preflight: Section<z.output<typeof s.PreflightSchema>>;
  readonly calibration: Section<z.output<typeof s.CalibrationSchema>>;
  readonly trial: Section<z.output<typeof s.TrialSchema>>;
  readonly evidence: Section<z.output<typeof s.EvidenceSchema>>;
  readonly rollout: Section<z.output<typeof s.RolloutSchema>>;
}

export type Report = (path: PathSegment[], message: string) => void;
export type Rule = (ctx: RuleInput, report: Report) => void;

/** The key was not given at all (as opposed to given and rejected, which is already reported). */
export function absent<T>(section: Section<T>, key: keyof T & string): boolean {
  return section.value[key] === undefined && !section.failed.has(key);
}

/** How messages name an engine: its id, or its position when the id itself was rejected. */
export function engineName(ctx: RuleInput, index: number): string {
  return ctx.engines[index]?.value.id ?? ctx.rawEngineIds[index] ?? `engines[${index}]`;
}

export function knownAliases(ctx: RuleInput): string[] {
  return [...new Set(ctx.rawAliases.filter((a): a is string => a !== undefined))];
}

/** Two hosts share an alias (reported at the second). */
export function hasDuplicateAliases(ctx: RuleInput): boolean {
  return knownAliases(ctx).length < ctx.rawAliases.filter((a) => a !== undefined).length;
}

/**
 * A host reference to report: `hosts` is a list and no host has this alias. While two hosts share an
 * alias, the alias a reference meant is most likely the one the duplicate overwrote: such references
 * are named in the duplicate's own message (see `danglingReferences`), not as separate fixes.
 */
export function isUnknownAlias(ctx: RuleInput, alias: string): boolean {
  return ctx.hostsListed && !hasDuplicateAliases(ctx) && !knownAliases(ctx).includes(alias);
}

/** References to host aliases that no host has: engine hosts, the router host and jump hosts, by path. */
export function danglingReferences(ctx: RuleInput, isAlias: (s: string) => boolean): Array<{ path: string; alias: string }> {
  const known = knownAliases(ctx);
  const out: Array<{ path: string; alias: string }> = [];
  const check = (path: string, alias: string | undefined) => alias !== undefined && isAlias(alias) && !known.includes(alias) && out.push({ path, alias });
  ctx.engines.forEach((e, i) => check(`engines[${i}].host`, e.value.host));
  check("router.host", ctx.router.value.host);
  ctx.hosts.forEach((h, i) => check(`hosts[${i}].jump`, h.value.jump));
  return out;
}

/** The message for a reference to a host alias that no host has. */
export function unknownAliasMessage(ctx: RuleInput, alias: string): string {
  const known = knownAliases(ctx);
  return `"${alias}" is not the alias of any host; known aliases: ${known.join(", ") || "none"}${didYouMean(alias, known)}`;
}

/** Reports every repeat of a value after its first occurrence. */
export function reportDuplicates(
  values: ReadonlyArray<string | undefined>,
  path: (index: number) => PathSegment[],
  message: (value: string, first: number) => string,
  report: Report,
): void {
  const first = new Map<string, number>();
  values.forEach((value, i) => {
    if (value === undefined) return;
    const j = first.get(value);
    if (j === undefined) first.set(value, i);
    else report(path(i), message(value, j));
  });
}
