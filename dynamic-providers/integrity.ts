import type * as pulumi from "@pulumi/pulumi";
import { alteredEvidence } from "../lib/evidence/provider-evidence";

/** The replace key of a resource whose evidence record no longer matches the digest its state holds. */
export const EVIDENCE_ALTERED = "evidence";

/**
 * The evidence rule for the record itself: a refresh re-reads every record a resource wrote, and one whose
 * bytes changed (or that is gone) replaces the resource with the reason `evidence`, so the measurement is
 * taken again instead of trusting a file that no longer says what was measured.
 */
export function withEvidenceIntegrity(inner: pulumi.dynamic.ResourceProvider): pulumi.dynamic.ResourceProvider {
  return {
    ...inner,
    async read(id: string, props: Record<string, unknown>) {
      const seen = inner.read ? await inner.read(id, props) : { id, props };
      const { evidenceAltered: _previous, ...rest } = (seen.props ?? {}) as Record<string, unknown>;
      const altered = await alteredEvidence(rest);
      return { id: seen.id ?? id, props: altered.length > 0 ? { ...rest, evidenceAltered: altered } : rest };
    },
    async diff(id: string, olds: Record<string, unknown>, news: Record<string, unknown>) {
      const result = await inner.diff!(id, olds, news);
      if (!Array.isArray(olds.evidenceAltered) || olds.evidenceAltered.length === 0) return result;
      return { ...result, changes: true, replaces: [...(result.replaces ?? []), EVIDENCE_ALTERED], deleteBeforeReplace: result.deleteBeforeReplace ?? false };
    },
  };
}
