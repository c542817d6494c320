/**
 * The engine contract of narwhal-inference 0.7.0 (`narwhal.config.EngineContract`): what every engine
 * of a fleet must share for KV handoffs to be safe, as each engine's sidecar attests it and as
 * `finalize-fleet` writes it into the fleet document's `engine_contract`.
 */
import { canonicalDigest } from "./canonical";
import { AttestationError } from "./errors";

export interface EngineContract {
  engine_version: string;
  /** `sha256:<64 hex>` image ID for a container engine; "" for a native one. */
  image_digest: string;
  /** The NIXL package version. */
  transfer_version: string;
  /** vLLM's NIXL_CONNECTOR_VERSION: the handshake protocol version. */
  connector_version: number;
  model_architecture: string;
  model_dtype: string;
  kv_heads: number;
  head_size: number;
  hidden_layers: number;
  attention_backend: string;
  kv_cache_dtype: string;
  cross_layers_blocks: boolean | null;
  hybrid_kv_cache_manager: boolean | null;
  connector: string;
  kv_role: string;
  transfer_mode: string;
  speculative_config: string;
  enforce_handshake_compat: boolean | null;
}

/** The fields in narwhal's order (the dataclass's), which every message and comparison follows. */
export const CONTRACT_FIELDS = [
  "engine_version",
  "image_digest",
  "transfer_version",
  "connector_version",
  "model_architecture",
  "model_dtype",
  "kv_heads",
  "head_size",
  "hidden_layers",
  "attention_backend",
  "kv_cache_dtype",
  "cross_layers_blocks",
  "hybrid_kv_cache_manager",
  "connector",
  "kv_role",
  "transfer_mode",
  "speculative_config",
  "enforce_handshake_compat",
] as const satisfies ReadonlyArray<keyof EngineContract>;

export type ContractField = (typeof CONTRACT_FIELDS)[number];

const INT_FIELDS: ReadonlyArray<ContractField> = ["connector_version", "kv_heads", "head_size", "hidden_layers"];
const FLAG_FIELDS: ReadonlyArray<ContractField> = ["cross_layers_blocks", "hybrid_kv_cache_manager", "enforce_handshake_compat"];
/** `EngineContract.missing()`: the fields a complete contract must fill (vLLM attests every field). */
const COMPLETION_FIELDS: ReadonlyArray<ContractField> = [
  "transfer_version",
  "connector_version",
  "model_architecture",
  "model_dtype",
  "kv_heads",
  "head_size",
  "hidden_layers",
  "attention_backend",
  "kv_cache_dtype",
  "cross_layers_blocks",
  "hybrid_kv_cache_manager",
  "kv_role",
  "transfer_mode",
  "speculative_config",
];

/**
 * What narwhal's attestation loader refuses in a contract (`_read_contract`), as messages naming the
 * field; empty when it would load.
 */
export function contractProblems(raw: unknown): string[] {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return ["contract must be an object"];
  const c = raw as Record<string, unknown>;
  const problems: string[] = [];
  const unknown = Object.keys(c).filter((k) => !(CONTRACT_FIELDS as readonly string[]).includes(k));
  if (unknown.length) problems.push(`unknown contract field(s): ${unknown.sort().join(", ")}`);
  for (const f of CONTRACT_FIELDS) {
    const v = c[f];
    if (FLAG_FIELDS.includes(f)) {
      if (v !== null && typeof v !== "boolean") problems.push(`contract.${f} must be a boolean or null`);
    } else if (INT_FIELDS.includes(f)) {
      if (!(typeof v === "number" && Number.isInteger(v) && v >= 0)) problems.push(`contract.${f} must be a nonnegative integer`);
    } else if (typeof v !== "string") problems.push(`contract.${f} must be a string`);
  }
  if (c.engine_version === "") problems.push("contract.engine_version is required");
  if (c.connector === "") problems.push("contract.connector is required");
  if (c.enforce_handshake_compat === false) problems.push("contract.enforce_handshake_compat must stay true");
  if (typeof c.image_digest === "string" && c.image_digest !== "" && !/^sha256:[0-9a-f]{64}$/.test(c.image_digest)) {
    problems.push("contract.image_digest must be an immutable sha256 digest");
  }
  if (typeof c.transfer_mode === "string" && c.transfer_mode !== "" && !["pull", "push"].includes(c.transfer_mode)) {
    problems.push(`contract.transfer_mode must be pull or push, not ${JSON.stringify(c.transfer_mode)}`);
  }
  return problems;
}

/**
 * The fields left unset, sorted (narwhal's `EngineContract.missing()`): `narwhal-check` reports the
 * contract as undeclared for them, and `finalize-fleet` refuses it.
 */
export function undeclaredFields(contract: EngineContract): ContractField[] {
  return COMPLETION_FIELDS.filter((f) => {
    const v = contract[f];
    return v === null || v === "" || v === 0;
  }).sort();
}

/** `EngineContract.fingerprint()`: 16 hex digits of the canonical digest, as narwhal prints it. */
export function contractFingerprint(contract: EngineContract): string {
  return canonicalDigest(contract).slice(7, 23);
}

/** One engine's attested contract. */
export interface AttestedContract {
  readonly engineId: string;
  readonly contract: EngineContract;
}

/** The fleet's contract: what every engine attested, and what it leaves undeclared. */
export interface FleetContract {
  readonly contract: EngineContract;
  readonly fingerprint: string;
  /** Fields no engine fills; `narwhal-check` skips the contract for them (see {@link undeclaredFields}). */
  readonly undeclared: ContractField[];
  readonly engines: string[];
}

/**
 * `finalize-fleet`: every engine's attested contract must be the same. Otherwise throws
 * `NARWHAL_CONTRACT_MISMATCH` naming each field that differs and which engines hold which value.
 */
export function engineContract(attested: ReadonlyArray<AttestedContract>): FleetContract {
  if (attested.length === 0) throw new AttestationError("NARWHAL_CONTRACT_MISMATCH", "engine_contract: no engine was attested, so the fleet has no contract");
  const differing = CONTRACT_FIELDS.flatMap((field) => {
    const holders = new Map<string, string[]>();
    for (const a of attested) {
      const key = JSON.stringify(a.contract[field] ?? null);
      holders.set(key, [...(holders.get(key) ?? []), a.engineId]);
    }
    return holders.size > 1 ? [`  - ${field}: ${[...holders].map(([value, ids]) => `${value} (${ids.join(", ")})`).join(" vs ")}`] : [];
  });
  if (differing.length) {
    throw new AttestationError(
      "NARWHAL_CONTRACT_MISMATCH",
      `engine_contract: the engines' attested contracts differ, so KV handoffs between them are not safe; ` +
        `relaunch the odd engines with the fleet's settings:\n${differing.join("\n")}`,
    );
  }
  const contract = Object.fromEntries(CONTRACT_FIELDS.map((f) => [f, attested[0].contract[f]])) as unknown as EngineContract;
  return { contract, fingerprint: contractFingerprint(contract), undeclared: undeclaredFields(contract), engines: attested.map((a) => a.engineId) };
}
