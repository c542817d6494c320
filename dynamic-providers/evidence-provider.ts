import type * as pulumi from "@pulumi/pulumi";
import type { ZodType } from "zod";
import { diffInputs } from "../lib/evidence/diff";
import { schemaFailures } from "../lib/input-rules";
import { withEvidenceIntegrity } from "./integrity";

export { schemaFailures };

/** What a provider's own rule adds to the diff its lists derive: more replace reasons, or an in-place change. */
export interface DiffAddition {
  /** Reasons to replace beyond the inputs that changed, in the order `pulumi preview` should show them. */
  replaces?: string[];
  /** True when something outside the lists changed and only updates (the lists' own changes need not be said). */
  changes?: boolean;
}

/**
 * One evidence provider, declared by what its measurement was taken against. The lists decide the diff:
 * a change to a `measuredAgainst` input replaces (named as the reason), a change to an `updatable` one
 * updates in place, anything else is no change. `update` keeps the measurement and takes the new inputs.
 */
export interface EvidenceProviderSpec<I extends object, O extends Partial<I>> {
  measuredAgainst: ReadonlyArray<keyof I & string>;
  updatable: ReadonlyArray<keyof I & string>;
  /**
   * Bad inputs, refused before anything remote is touched: a zod schema (each issue names its property;
   * a property whose value is only known after apply is judged on the up, not the preview).
   */
  inputs?: ZodType;
  /** The inputs as check hands them on, with defaults filled in. */
  defaults?: (news: I) => I;
  create(inputs: I): Promise<{ id: string; outs: O }>;
  /** The inputs each side is compared with: defaults of state written before a setting existed, values a preview cannot know yet. */
  compared?: (olds: O, news: I) => { olds: I; news: I };
  /** The provider's own rule (what a refresh saw move, a readdressed host), added after the lists' reasons. */
  addition?: (olds: O, news: I) => DiffAddition;
  /** Re-judges the kept measurement against the new inputs; without it the outputs are the old ones with the new inputs. */
  update?: (olds: O, news: I) => Promise<O> | O;
  read?: (id: string, props: O) => Promise<{ id: string; props: O }>;
  delete?: (id: string, props: O) => Promise<void>;
}

/** The check of a provider that writes its own methods: the inputs as given, with the schema's failures when there are any. */
export function schemaCheck<I extends object>(schema: ZodType) {
  return async (_olds: I, news: I): Promise<pulumi.dynamic.CheckResult> => {
    const failures = schemaFailures(schema, news as Record<string, unknown>);
    return failures.length ? { inputs: news, failures } : { inputs: news };
  };
}

/** The provider object: check, diff and update derived from the spec, always under the evidence integrity rule. */
export function evidenceProvider<I extends object, O extends Partial<I>>(spec: EvidenceProviderSpec<I, O>): pulumi.dynamic.ResourceProvider {
  const { inputs } = spec;
  return withEvidenceIntegrity({
    async check(_olds: I, news: I) {
      const failures = inputs === undefined ? [] : schemaFailures(inputs, news as Record<string, unknown>);
      const checked = spec.defaults ? spec.defaults(news) : news;
      return failures.length ? { inputs: checked, failures } : { inputs: checked };
    },
    create: (inputs: I) => spec.create(inputs),
    async diff(_id: string, olds: O, news: I) {
      const compared = spec.compared ? spec.compared(olds, news) : { olds: olds as unknown as I, news };
      const listed = diffInputs<I>(compared.olds, compared.news, spec.measuredAgainst, spec.updatable);
      const added = spec.addition?.(olds, news) ?? {};
      const replaces = [...(listed.replaces ?? []), ...(added.replaces ?? [])];
      return { changes: listed.changes === true || replaces.length > 0 || added.changes === true, replaces, deleteBeforeReplace: false };
    },
    async update(_id: string, olds: O, news: I) {
      return { outs: spec.update ? await spec.update(olds, news) : { ...olds, ...news } };
    },
    ...(spec.read ? { read: spec.read } : {}),
    ...(spec.delete ? { delete: spec.delete } : {}),
  });
}
