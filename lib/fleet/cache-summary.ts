import type { FleetSpec } from "../config/types";
import type { RuntimeIdentity } from "../discovery/runtime";
import type { CacheLayout } from "../engine/cache-layout";
import type { LaunchPlan } from "../launch/plan";
import { budgetGroups, cacheGroups, layoutDisagreements, signatureInputsFor } from "../cache/groups";
import { budgetFor } from "../fabric/budget";

/** What one engine contributes to the fleet's cache groups: where it runs, what it runs, what it resolved. */
export interface EngineCacheFacts {
  readonly id: string;
  readonly index: number;
  readonly runtime: RuntimeIdentity;
  readonly modelConfigSha256: string;
  readonly accelerator: string | null;
  readonly plan: LaunchPlan;
  readonly transport: "tcp" | "ucx_rdma";
  readonly layout: CacheLayout;
}

export interface CacheGroupSummary {
  signature: string;
  representative: string;
  members: string[];
  /** Members whose live layout differs from the representative's; each such geometry gets its own budget. */
  disagreements: Array<{ engine: string; fields: string[] }>;
  budgets: Array<{ key: string; representative: string; members: string[]; payloadBytes: number; requiredGbps: number; formula: string }>;
}

/**
 * Gate C's cache-equivalence groups with their Gate D fabric budgets, from every engine's captured
 * layout. Pure arithmetic over recorded evidence: a budget input change recomputes it, nothing is measured.
 */
export function cacheSummary(spec: FleetSpec, engines: ReadonlyArray<EngineCacheFacts>): CacheGroupSummary[] {
  const groups = cacheGroups(
    engines.map((e) => ({
      id: e.id,
      index: e.index,
      inputs: signatureInputsFor({ runtime: e.runtime, modelConfigSha256: e.modelConfigSha256, accelerator: e.accelerator, plan: e.plan, transport: e.transport }),
    })),
  );
  const layouts = new Map(engines.map((e) => [e.id, e.layout]));
  const disagreements = layoutDisagreements(groups, layouts);
  const budgets = budgetGroups(groups, layouts);
  return groups.map((g) => ({
    signature: g.signature,
    representative: g.representative,
    members: [...g.members],
    disagreements: disagreements
      .filter((d) => d.signature === g.signature)
      .map((d) => ({ engine: d.engineId, fields: d.differences.map((f) => f.field) })),
    budgets: budgets
      .filter((b) => b.signature === g.signature)
      .map((b) => {
        const budget = budgetFor(b.layout, spec.fabric);
        return { key: b.key, representative: b.representative, members: [...b.members], payloadBytes: budget.payloadBytes, requiredGbps: budget.requiredGbps, formula: budget.formula };
      }),
  }));
}
