/**
 * The attestation document `narwhal-attest --document` serves for one engine (`narwhal.attestation`
 * version 1: contract, sources, launch), built from what earlier gates measured: the checked launch
 * plan, the captured cache layout, the proved generation and discovery's model and runtime facts.
 * `launch` carries the plan hash, cache layout digest and generation digest, so the sidecar's
 * `launch_digest` and `attestation_digest` bind all three; a new generation is a new document.
 */
import { cacheExpectations, type LaunchPlan } from "../launch/plan";
import { cacheLayoutDigest, normaliseDtype, type CacheLayout } from "../engine/cache-layout";
import type { ProcessIdentity } from "../engine/generation";
import { canonicalDigest } from "./canonical";
import { contractProblems, type ContractField, type EngineContract } from "./contract";
import { AttestationError } from "./errors";
import { flagValue } from "../image-check/request";

export const ATTESTATION_SCHEMA = "narwhal.attestation";
export const ATTESTATION_SCHEMA_VERSION = 1;

export interface AttestationFacts {
  readonly engineId: string;
  readonly plan: Pick<LaunchPlan, "argv" | "planSha256" | "tensorParallelSize">;
  readonly layout: Pick<CacheLayout, "tensorParallelSize" | "ranks">;
  /** CacheCapture.cacheLayoutDigest; must be the digest of `layout`. */
  readonly cacheLayoutDigest: string;
  readonly generation: { readonly generationDigest: string; readonly version: string; readonly processIdentity: ProcessIdentity };
  readonly model: { readonly architecture: string | null; readonly numHiddenLayers: number | null; readonly configSha256: string };
  /** The checked image ID (`sha256:<64 hex>`) of a container engine; absent for a native one. */
  readonly imageId?: string;
  /**
   * What the image check read of the runtime the engine runs: the `nixl` package's version and vLLM's
   * NIXL_CONNECTOR_VERSION (null when that check did not read them), and the check's digest, their source.
   */
  readonly transfer: { readonly nixlVersion: string | null; readonly connectorVersion: number | null; readonly checkDigest: string };
}

export interface AttestationLaunch {
  /** Serving flags with the per-launch values (host, port, served name) removed, as narwhal records them. */
  args: string[];
  engine_id: string;
  plan_sha256: string;
  cache_layout_sha256: string;
  generation_sha256: string;
  process: { pid: number } | { container_id: string };
  model_config_sha256: string;
  image_id: string;
  tensor_parallel_size: number;
}

/**
 * What a sidecar serves as its document: the program's own ({@link AttestationDocument}), or an
 * adopted runbook engine's, whose `launch` is the runbook launcher's record (runbook-document.ts).
 */
export interface ServedDocument {
  schema: typeof ATTESTATION_SCHEMA;
  schema_version: typeof ATTESTATION_SCHEMA_VERSION;
  contract: EngineContract;
  sources: Partial<Record<ContractField, string>>;
  launch?: object;
}

export interface AttestationDocument {
  schema: typeof ATTESTATION_SCHEMA;
  schema_version: typeof ATTESTATION_SCHEMA_VERSION;
  contract: EngineContract;
  sources: Partial<Record<ContractField, string>>;
  launch: AttestationLaunch;
}

/** Flags whose values change per launch (narwhal's vLLM `_PER_LAUNCH_VALUES`). */
const PER_LAUNCH_VALUES = new Set(["--host", "--port", "--served-model-name", "--kv-events-config"]);

/** narwhal's `launch_args`: the flag stays, the value after it goes. */
export function launchArgs(args: ReadonlyArray<string>): string[] {
  const kept: string[] = [];
  let skip = false;
  for (const arg of args) {
    if (skip) {
      skip = false;
      continue;
    }
    kept.push(arg);
    skip = PER_LAUNCH_VALUES.has(arg);
  }
  return kept;
}

/** vLLM's NIXL connector classes and the direction they move KV (narwhal's transfer-mode capture). */
const TRANSFER_MODES: Readonly<Record<string, "pull" | "push">> = { NixlConnector: "pull", NixlPullConnector: "pull", NixlPushConnector: "push" };

/**
 * The transfer facts of the engine's image check: the `nixl` (else `nixl-rocm`) distribution's version, as
 * narwhal reads it, and NIXL_CONNECTOR_VERSION from the runtime's vLLM source. A check made before the
 * runtime check read them has none; the contract then leaves both undeclared until the engine is checked again.
 */
export function transferFacts(check: { readonly checkDigest: string; readonly findings: { readonly nixl?: { readonly version: string; readonly connectorVersion: number } | null } }): AttestationFacts["transfer"] {
  const nixl = check.findings.nixl ?? null;
  return { nixlVersion: nixl?.version ?? null, connectorVersion: nixl?.connectorVersion ?? null, checkDigest: check.checkDigest };
}

/** The document for one engine; throws `NARWHAL_ATTESTATION_INPUT` naming the engine and the fact that is wrong. */
export function attestationDocument(facts: AttestationFacts): AttestationDocument {
  const who = `engine ${facts.engineId}`;
  const bad = (message: string): never => {
    throw new AttestationError("NARWHAL_ATTESTATION_INPUT", `${who}: ${message}; no attestation document was written`);
  };
  const { plan, layout, generation } = facts;
  const rank = layout.ranks[0] ?? bad("the captured cache layout has no rank");
  if (cacheLayoutDigest(layout) !== facts.cacheLayoutDigest) bad(`the cache layout digest ${facts.cacheLayoutDigest} is not the digest of the captured layout`);
  if (layout.tensorParallelSize !== plan.tensorParallelSize) bad(`the captured layout has tensor parallel size ${layout.tensorParallelSize}, the plan ${plan.tensorParallelSize}`);

  const transferText = flagValue(plan.argv, "--kv-transfer-config") ?? bad("the launch plan has no --kv-transfer-config");
  let transfer: Record<string, unknown>;
  try {
    transfer = JSON.parse(transferText) as Record<string, unknown>;
  } catch {
    return bad("the launch plan's --kv-transfer-config is not JSON");
  }
  const extra = (transfer.kv_connector_extra_config ?? {}) as Record<string, unknown>;
  const connector = typeof transfer.kv_connector === "string" ? transfer.kv_connector : bad("--kv-transfer-config names no kv_connector");
  const mode = TRANSFER_MODES[connector] ?? bad(`connector ${JSON.stringify(connector)} is not a NIXL connector (${Object.keys(TRANSFER_MODES).join(", ")})`);
  // vLLM checks handshake compatibility unless the connector's extra config turns it off.
  const handshake = extra.enforce_handshake_compat ?? true;
  if (handshake !== true) bad("the launch plan turns enforce_handshake_compat off; narwhal refuses such a contract (silent KV corruption)");
  const expected = cacheExpectations(plan as LaunchPlan);
  const dtype = normaliseDtype(expected.dtype === "auto" ? rank.dtype : expected.dtype);
  const imageId = facts.imageId ?? "";
  if (generation.processIdentity.containerId !== undefined && !/^sha256:[0-9a-f]{64}$/.test(imageId)) {
    bad(`a container engine needs its checked image ID (sha256:<64 hex>), got ${JSON.stringify(facts.imageId ?? null)}`);
  }
  const hiddenLayers = facts.model.numHiddenLayers ?? rank.numLayers;

  const contract: EngineContract = {
    engine_version: generation.version,
    image_digest: imageId,
    transfer_version: facts.transfer.nixlVersion ?? "",
    connector_version: facts.transfer.connectorVersion ?? 0,
    model_architecture: facts.model.architecture ?? "",
    model_dtype: dtype,
    kv_heads: rank.numKvHeads,
    head_size: rank.headSize,
    hidden_layers: hiddenLayers,
    attention_backend: rank.attentionBackend,
    kv_cache_dtype: expected.kvCacheDtype,
    cross_layers_blocks: extra.enable_cross_layers_blocks === true,
    // Paged KV in fewer layers than the model has: linear-attention or SSM layers keep another kind of cache.
    hybrid_kv_cache_manager: rank.numLayers < hiddenLayers,
    connector,
    kv_role: typeof transfer.kv_role === "string" ? transfer.kv_role : "",
    transfer_mode: mode,
    speculative_config: flagValue(plan.argv, "--speculative-config") ?? "disabled",
    enforce_handshake_compat: true,
  };
  const problems = contractProblems(contract);
  if (problems.length) bad(problems.join("; "));

  const fromPlan = `launch plan ${plan.planSha256}`;
  const fromLayout = `cache layout ${facts.cacheLayoutDigest}`;
  const fromModel = `model config.json sha256:${facts.model.configSha256}`;
  const sources: Record<ContractField, string> = {
    engine_version: `engine generation ${generation.generationDigest}`,
    image_digest: `image check ${imageId}`,
    transfer_version: `image check ${facts.transfer.checkDigest}`,
    connector_version: `image check ${facts.transfer.checkDigest}`,
    model_architecture: fromModel,
    model_dtype: expected.dtype === "auto" ? fromLayout : fromPlan,
    kv_heads: fromLayout,
    head_size: fromLayout,
    hidden_layers: facts.model.numHiddenLayers !== null ? fromModel : fromLayout,
    attention_backend: fromLayout,
    kv_cache_dtype: fromPlan,
    cross_layers_blocks: fromPlan,
    hybrid_kv_cache_manager: fromLayout,
    connector: fromPlan,
    kv_role: fromPlan,
    transfer_mode: fromPlan,
    speculative_config: fromPlan,
    enforce_handshake_compat: fromPlan,
  };
  // narwhal requires a source for every field it holds populated, and only for those.
  const populated = (f: ContractField) => typeof contract[f] === "boolean" || (contract[f] !== null && contract[f] !== "" && contract[f] !== 0);
  const id = generation.processIdentity;
  return {
    schema: ATTESTATION_SCHEMA,
    schema_version: ATTESTATION_SCHEMA_VERSION,
    contract,
    sources: Object.fromEntries(Object.entries(sources).filter(([f]) => populated(f as ContractField))),
    launch: {
      args: launchArgs(plan.argv.slice(3)),
      engine_id: facts.engineId,
      plan_sha256: plan.planSha256,
      cache_layout_sha256: facts.cacheLayoutDigest,
      generation_sha256: generation.generationDigest,
      process: id.containerId !== undefined ? { container_id: id.containerId } : { pid: id.pid! },
      model_config_sha256: facts.model.configSha256,
      image_id: imageId,
      tensor_parallel_size: plan.tensorParallelSize,
    },
  };
}

/** narwhal's canonical digest of the document: a replace key of the sidecar and its attestation. */
export function documentDigest(document: AttestationDocument): string {
  return canonicalDigest(document);
}

/** narwhal's `launch_digest`: canonical digest of `{contract, launch}`. */
export function launchDigest(contract: unknown, launch: unknown): string {
  return canonicalDigest({ contract, launch });
}
