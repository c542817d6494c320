/**
 * Gate F preparation: each engine's `--max-num-seqs` from its launch plan becomes its profiling limit
 * (`profiling-limits.json`, schema `narwhal.profiling-limits` v1, as narwhal-profile's `--limits` reads it).
 */
import { ProfileError } from "./errors";

/**
 * The plan's `--max-num-seqs` (last one wins, as argparse does; `--max-num-seqs=N` too), or undefined
 * when the plan leaves vLLM's default, which is far above any concurrency the sweep asks for.
 */
export function maxNumSeqsOf(argv: readonly string[]): number | undefined {
  let found: string | undefined;
  argv.forEach((a, i) => {
    if (a === "--max-num-seqs" || a === "--max_num_seqs") found = argv[i + 1];
    else if (/^--max[-_]num[-_]seqs=/.test(a)) found = a.slice(a.indexOf("=") + 1);
  });
  if (found === undefined) return undefined;
  const n = Number(found);
  if (!Number.isInteger(n) || n < 1) throw new ProfileError("NARWHAL_PROFILE_SWEEP", `the launch plan's --max-num-seqs is ${JSON.stringify(found)}, not a positive integer`);
  return n;
}

export interface LimitsDocument {
  schema: "narwhal.profiling-limits";
  schema_version: 1;
  engines: Record<string, number>;
}

/** The document narwhal's `load_sequence_limits` accepts: every fleet engine, each a positive integer. */
export function limitsDocument(limits: Readonly<Record<string, number | undefined>>, engineIds: readonly string[]): LimitsDocument {
  const engines: Record<string, number> = {};
  for (const id of engineIds) {
    const n = limits[id];
    if (n === undefined || !Number.isInteger(n) || n < 1) {
      throw new ProfileError("NARWHAL_PROFILE_SWEEP", `profiling limits must name every fleet engine with a positive limit: engine ${id} has ${JSON.stringify(n)}`);
    }
    engines[id] = n;
  }
  return { schema: "narwhal.profiling-limits", schema_version: 1, engines };
}

/** narwhal's `load_sequence_limits`: a `narwhal.profiling-limits` v1 document naming exactly the fleet's engines. */
export function readLimits(document: unknown, path: string, engineIds: readonly string[]): Record<string, number> {
  const d = document as Partial<LimitsDocument> | null;
  if (!d || typeof d !== "object" || Array.isArray(d) || d.schema !== "narwhal.profiling-limits" || d.schema_version !== 1 || !d.engines || typeof d.engines !== "object" || Array.isArray(d.engines)) {
    throw new ProfileError("NARWHAL_PROFILE_SWEEP", `invalid profiling limits: ${path}`);
  }
  const ids = Object.keys(d.engines);
  const fleet = new Set(engineIds);
  if (ids.length !== fleet.size || ids.some((id) => !fleet.has(id)) || Object.values(d.engines).some((n) => !Number.isInteger(n) || n < 1)) {
    throw new ProfileError("NARWHAL_PROFILE_SWEEP", `profiling limits must name every fleet engine with a positive limit: ${path}`);
  }
  return { ...d.engines };
}
