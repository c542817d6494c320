/**
 * Gate C's cache-equivalence groups, and Gate D's budget groups derived from them.
 *
 * 1. {@link cacheSignature}: the runbook's signature, the first 16 hex digits of SHA-256 over the sorted-key
 *    JSON of exactly seven launch facts ({@link SIGNATURE_FIELDS}). GPU indices, addresses and device
 *    paths are not among them: engines on different GPUs or hosts share a group when the accelerator
 *    product and the TP shape match.
 * 2. {@link cacheGroups}: engines grouped by signature; the representative is the lowest engine index.
 * 3. {@link layoutDisagreements}: after every engine's live cache is captured, the members whose layout or
 *    page geometry differs from their representative's, field by field ("Compare resolved layout and page
 *    geometry within each signature group").
 * 4. {@link budgetGroups}: each signature group split by {@link cacheGeometryDigest}, so "a differing
 *    layout or page geometry gets its own Gate D budget".
 *
 * Pure: no I/O, no Pulumi. Every result is ordered deterministically.
 */
import { createHash } from "node:crypto";
import { canonicalJson, sha256Json } from "../digest";
import { packagesOfInterest, type PackageMap, type RuntimeIdentity } from "../discovery/runtime";
import { PAGE_GEOMETRY_FIELDS, type CacheLayout, type CacheRankLayout } from "../engine/cache-layout";
import type { LaunchPlan } from "../launch/plan";
import { CacheGroupError } from "./errors";
import { pythonJsonDumps } from "./python-json";

/**
 * The seven facts the signature hashes, with the runbook script's snake_case keys (the hashed JSON uses
 * them, so they are part of the signature's value).
 */
export interface CacheSignatureInputs {
  /**
   * Container runtime: the image ID the runtime resolved (`docker image inspect` `.Id`, `sha256:…`).
   * Native runtime: there is no image, so this is the native runtime's identity digest
   * ({@link runtimeImageId}): `sha256:` over the resolved vllm command, its interpreter, script kind,
   * vLLM version and every installed package version, so any change to the host's Python environment
   * changes it as a new image would.
   */
  readonly image_id: string;
  /** sha256 (hex) of the checkpoint's exact config.json bytes (discovery's `configSha256`). */
  readonly model_config_sha256: string;
  /** Accelerator product as the vendor tool prints it, e.g. "NVIDIA H100 80GB HBM3" ("none" without GPUs). */
  readonly accelerator: string;
  readonly tensor_parallel_size: number;
  /**
   * The GPU visibility policy: the name of the variable the plan sets (CUDA_VISIBLE_DEVICES,
   * HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES; several joined by ","), never its value: GPU indices are
   * excluded from the signature.
   */
  readonly gpu_visibility_env: string;
  /**
   * Runtime package versions that decide serving behaviour (normalized name → version: vllm, torch,
   * transformers, NIXL, UCX bindings, …; lib/discovery/runtime `packagesOfInterest`). Native: read from
   * the interpreter of the vllm console script; container: from `pip list` inside the image.
   */
  readonly runtime: PackageMap;
  /** KV transfer transport of the launch policy: "tcp" or "ucx_rdma". */
  readonly transport: string;
}

/** The hashed keys, in the runbook script's order (the JSON itself is key-sorted). */
export const SIGNATURE_FIELDS = [
  "image_id",
  "model_config_sha256",
  "accelerator",
  "tensor_parallel_size",
  "gpu_visibility_env",
  "runtime",
  "transport",
] as const satisfies ReadonlyArray<keyof CacheSignatureInputs>;

function inputProblem(field: string, expected: string, got: unknown): CacheGroupError {
  return new CacheGroupError("NARWHAL_CACHE_SIGNATURE_INPUT", `cache signature input ${field} must be ${expected}; got ${got === undefined ? "nothing" : JSON.stringify(got)}`);
}

/** Exactly the seven fields, checked; anything else on the object (GPU ids, addresses) is dropped. */
function pick(inputs: CacheSignatureInputs): CacheSignatureInputs {
  const i = inputs as unknown as Record<string, unknown>;
  for (const f of ["image_id", "model_config_sha256", "accelerator", "transport"] as const) {
    if (typeof i[f] !== "string" || i[f] === "") throw inputProblem(f, "a non-empty string", i[f]);
  }
  if (typeof i.gpu_visibility_env !== "string") throw inputProblem("gpu_visibility_env", "a string (the visibility variable's name)", i.gpu_visibility_env);
  if (!Number.isSafeInteger(i.tensor_parallel_size) || (i.tensor_parallel_size as number) < 1) {
    throw inputProblem("tensor_parallel_size", "a positive integer", i.tensor_parallel_size);
  }
  const runtime = i.runtime;
  if (!runtime || typeof runtime !== "object" || Array.isArray(runtime) || Object.values(runtime).some((v) => typeof v !== "string")) {
    throw inputProblem("runtime", "an object of package name → version strings", runtime);
  }
  return {
    image_id: inputs.image_id,
    model_config_sha256: inputs.model_config_sha256,
    accelerator: inputs.accelerator,
    tensor_parallel_size: inputs.tensor_parallel_size,
    gpu_visibility_env: inputs.gpu_visibility_env,
    runtime: { ...inputs.runtime },
    transport: inputs.transport,
  };
}

/** The exact text the signature hashes: Python's `json.dumps(inputs, sort_keys=True)` (evidence). */
export function signatureDocument(inputs: CacheSignatureInputs): string {
  return pythonJsonDumps(pick(inputs));
}

function signatureOf(document: string): string {
  return createHash("sha256").update(document, "utf8").digest("hex").slice(0, 16);
}

/** First 16 hex digits of SHA-256 over {@link signatureDocument}: equal to the runbook script's value. */
export function cacheSignature(inputs: CacheSignatureInputs): string {
  return signatureOf(signatureDocument(inputs));
}

// ---------- deriving the inputs from what the program measured ----------

/** The variables that select GPUs: vLLM on ROCm copies HIP_ into CUDA_; ROCR_ filters earlier. */
export const GPU_VISIBILITY_VARIABLES = ["CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"] as const;

/** The names (not values) of the visibility variables an engine environment sets, sorted, "," joined. */
export function gpuVisibilityEnv(env: Readonly<Record<string, string>>): string {
  return GPU_VISIBILITY_VARIABLES.filter((k) => Object.prototype.hasOwnProperty.call(env, k))
    .sort()
    .join(",");
}

/**
 * `image_id` for a runtime identity: the image ID for a container; for a native runtime the `sha256:`
 * of its identity record without the free-text reason packages were unreadable (the same digest
 * discovery records as its `runtime` facet).
 */
export function runtimeImageId(identity: RuntimeIdentity): string {
  if (identity.kind === "docker") return identity.imageId;
  const { packagesUnknownReason: _reason, ...rest } = identity;
  return sha256Json(rest);
}

/** What the signature's inputs are derived from. */
export interface SignatureSources {
  readonly runtime: RuntimeIdentity;
  /** Discovery's `configSha256` of the checkpoint's config.json. */
  readonly modelConfigSha256: string;
  /** Discovery's accelerator product; null (no GPU, e.g. a simulated host) becomes "none". */
  readonly accelerator: string | null;
  readonly plan: Pick<LaunchPlan, "tensorParallelSize" | "env">;
  readonly transport: "tcp" | "ucx_rdma";
}

/** The seven signature inputs of one engine, from its runtime identity, discovery facts and launch plan. */
export function signatureInputsFor(s: SignatureSources): CacheSignatureInputs {
  return {
    image_id: runtimeImageId(s.runtime),
    model_config_sha256: s.modelConfigSha256,
    accelerator: s.accelerator ?? "none",
    tensor_parallel_size: s.plan.tensorParallelSize,
    gpu_visibility_env: gpuVisibilityEnv(s.plan.env),
    runtime: packagesOfInterest(s.runtime.packages ?? {}),
    transport: s.transport,
  };
}

// ---------- signature groups ----------

export interface GroupEngine {
  readonly id: string;
  /** 0-based position in the fleet's `engines`: the lowest index represents its group. */
  readonly index: number;
  readonly inputs: CacheSignatureInputs;
}

export interface CacheGroup {
  readonly signature: string;
  /** The seven hashed facts (equal for every member). */
  readonly inputs: CacheSignatureInputs;
  /** The member with the lowest engine index. */
  readonly representative: string;
  /** Engine ids in engine-index order; the representative first. */
  readonly members: ReadonlyArray<string>;
}

function checkEngines(engines: ReadonlyArray<{ id: string; index: number }>): void {
  const problems: string[] = [];
  const ids = new Set<string>();
  const indices = new Map<number, string>();
  for (const e of engines) {
    if (typeof e.id !== "string" || e.id === "") problems.push(`an engine has no id (${JSON.stringify(e.id)})`);
    else if (ids.has(e.id)) problems.push(`engine id ${e.id} appears more than once`);
    ids.add(e.id);
    if (!Number.isSafeInteger(e.index) || e.index < 0) problems.push(`engine ${e.id} has index ${e.index}; indices are 0-based integers`);
    else if (indices.has(e.index)) problems.push(`engines ${indices.get(e.index)} and ${e.id} share index ${e.index}`);
    else indices.set(e.index, e.id);
  }
  if (problems.length) throw new CacheGroupError("NARWHAL_CACHE_GROUP_ENGINES", `cannot group the engines: ${problems.join("; ")}`);
}

/** Engines grouped by {@link cacheSignature}, groups ordered by signature (as the runbook prints them). */
export function cacheGroups(engines: ReadonlyArray<GroupEngine>): CacheGroup[] {
  checkEngines(engines);
  const bySignature = new Map<string, { document: string; inputs: CacheSignatureInputs; members: GroupEngine[] }>();
  for (const e of engines) {
    const inputs = pick(e.inputs);
    const document = pythonJsonDumps(inputs);
    const signature = signatureOf(document);
    const group = bySignature.get(signature);
    if (!group) {
      bySignature.set(signature, { document, inputs, members: [e] });
    } else if (group.document !== document) {
      // 64 bits of SHA-256 colliding: never expected, but grouping different engines would be silent.
      throw new CacheGroupError("NARWHAL_CACHE_GROUP_ENGINES", `engines ${group.members[0].id} and ${e.id} have different signature inputs but the same 16-digit signature ${signature}`);
    } else {
      group.members.push(e);
    }
  }
  return [...bySignature.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([signature, g]) => {
      const members = [...g.members].sort((a, b) => a.index - b.index).map((m) => m.id);
      return { signature, inputs: g.inputs, representative: members[0], members };
    });
}

// ---------- layout and page geometry ----------

/** What the comparison reads of a captured layout (lib/engine/cache-layout's `CacheLayout` fits). */
export type GeometryLayout = Pick<CacheLayout, "tensorParallelSize" | "ranks">;

/**
 * The per-rank fields that make up "layout and page geometry". `numGpuBlocks` is left out on purpose:
 * it is capacity, not geometry (it follows the free memory at start, differs between otherwise identical
 * engines, and does not change what one handoff moves; NIXL's handshake accepts differing block counts).
 */
export const GEOMETRY_FIELDS = PAGE_GEOMETRY_FIELDS;

function sortedRanks(layout: GeometryLayout): CacheRankLayout[] {
  return [...layout.ranks].sort((a, b) => a.rank - b.rank);
}

/**
 * `sha256:` over TP size and each rank's {@link GEOMETRY_FIELDS}: engines with equal layout and page
 * geometry share it whatever their capacity, address or NIXL engine id. Unlike `cacheLayoutDigest`
 * (attestation's, which binds `numGpuBlocks` too), this is what budget groups split on.
 */
export function cacheGeometryDigest(layout: GeometryLayout): string {
  return sha256Json({
    tensorParallelSize: layout.tensorParallelSize,
    ranks: sortedRanks(layout).map((r) => Object.fromEntries<unknown>([["rank", r.rank], ...GEOMETRY_FIELDS.map((f): [string, unknown] => [f, r[f]])])),
  });
}

export interface FieldDifference {
  /** `tensorParallelSize`, `rankCount`, or one of {@link GEOMETRY_FIELDS}. */
  readonly field: string;
  /** The representative's value: a scalar when every rank agrees, else the per-rank values in rank order. */
  readonly representative: unknown;
  readonly member: unknown;
}

export interface LayoutDisagreement {
  readonly signature: string;
  readonly representative: string;
  /** The member whose geometry differs from the representative's. */
  readonly engineId: string;
  readonly differences: ReadonlyArray<FieldDifference>;
}

function fieldValue(ranks: CacheRankLayout[], field: keyof CacheRankLayout): unknown {
  const values = ranks.map((r) => r[field]);
  return values.length > 0 && values.every((v) => v === values[0]) ? values[0] : values;
}

/** Field-by-field differences of two captured layouts' geometry (empty: same layout and page geometry). */
export function geometryDifferences(representative: GeometryLayout, member: GeometryLayout): FieldDifference[] {
  const out: FieldDifference[] = [];
  if (representative.tensorParallelSize !== member.tensorParallelSize) {
    out.push({ field: "tensorParallelSize", representative: representative.tensorParallelSize, member: member.tensorParallelSize });
  }
  const a = sortedRanks(representative);
  const b = sortedRanks(member);
  if (a.length !== b.length) out.push({ field: "rankCount", representative: a.length, member: b.length });
  for (const f of GEOMETRY_FIELDS) {
    const x = fieldValue(a, f);
    const y = fieldValue(b, f);
    if (canonicalJson(x) !== canonicalJson(y)) out.push({ field: f, representative: x, member: y });
  }
  return out;
}

type Layouts<L> = Readonly<Record<string, L | undefined>> | ReadonlyMap<string, L>;

function layoutOf<L>(layouts: Layouts<L>, id: string): L | undefined {
  if (layouts instanceof Map) return (layouts as ReadonlyMap<string, L>).get(id);
  const record = layouts as Readonly<Record<string, L | undefined>>;
  return Object.prototype.hasOwnProperty.call(record, id) ? record[id] : undefined;
}

function requireLayouts<L>(groups: ReadonlyArray<CacheGroup>, layouts: Layouts<L>): void {
  const missing = groups.flatMap((g) => g.members.filter((id) => layoutOf(layouts, id) === undefined));
  if (missing.length) {
    throw new CacheGroupError(
      "NARWHAL_CACHE_LAYOUT_MISSING",
      `no captured cache layout for engine${missing.length > 1 ? "s" : ""} ${missing.join(", ")}; capture every engine's live cache (capture-cache) before comparing geometry or budgeting Gate D`,
    );
  }
}

/**
 * For each group (in group order), the members (in index order) whose captured layout or page geometry
 * differs from the representative's, with the differing fields. Empty when every group is uniform.
 */
export function layoutDisagreements<L extends GeometryLayout>(groups: ReadonlyArray<CacheGroup>, layouts: Layouts<L>): LayoutDisagreement[] {
  requireLayouts(groups, layouts);
  const out: LayoutDisagreement[] = [];
  for (const g of groups) {
    const rep = layoutOf(layouts, g.representative)!;
    for (const id of g.members.slice(1)) {
      const differences = geometryDifferences(rep, layoutOf(layouts, id)!);
      if (differences.length) out.push({ signature: g.signature, representative: g.representative, engineId: id, differences });
    }
  }
  return out;
}

/** One Gate D budget: engines sharing a signature and a cache geometry. */
export interface BudgetGroup<L extends GeometryLayout = GeometryLayout> {
  /**
   * `<signature>-<first 12 hex of the geometry digest>`: stable when another part of its signature
   * group splits off, so evidence keyed by it is not disturbed.
   */
  readonly key: string;
  readonly signature: string;
  readonly geometryDigest: string;
  /** The lowest-index engine with this geometry; its layout is the budget's. */
  readonly representative: string;
  /** Engine ids in index order, representative first. */
  readonly members: ReadonlyArray<string>;
  readonly layout: L;
}

/**
 * Signature groups split by {@link cacheGeometryDigest}. A uniform group yields one budget group with the
 * signature group's representative; a split one yields one per geometry, each represented by its own
 * lowest-index member. Ordered by signature, then by representative's index.
 */
export function budgetGroups<L extends GeometryLayout>(groups: ReadonlyArray<CacheGroup>, layouts: Layouts<L>): BudgetGroup<L>[] {
  requireLayouts(groups, layouts);
  const out: BudgetGroup<L>[] = [];
  for (const g of groups) {
    const byDigest = new Map<string, string[]>();
    for (const id of g.members) {
      const digest = cacheGeometryDigest(layoutOf(layouts, id)!);
      byDigest.set(digest, [...(byDigest.get(digest) ?? []), id]);
    }
    // Map keeps insertion order, and members are in index order: representatives come out in index order.
    for (const [digest, members] of byDigest) {
      out.push({
        key: `${g.signature}-${digest.slice("sha256:".length, "sha256:".length + 12)}`,
        signature: g.signature,
        geometryDigest: digest,
        representative: members[0],
        members,
        layout: layoutOf(layouts, members[0])!,
      });
    }
  }
  return out;
}
