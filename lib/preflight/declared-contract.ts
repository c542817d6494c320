/**
 * The fleet document's `engine_contract` as narwhal-inference 0.7.0 loads it (`config/loading.py`):
 * vLLM's older names renamed (vllm_version, nixl_version, nixl_connector_version), every field the
 * document leaves out at the dataclass default, `connector` defaulting to the engine connector's
 * contract name (NixlConnector) and `enforce_handshake_compat` to true (vLLM checks handshakes). The
 * fingerprint the contract gate prints is taken over exactly that loaded form, so it is computed here
 * the same way, never from one field of the raw document.
 */
import { contractFingerprint, undeclaredFields, type ContractField, type EngineContract } from "../attestation/contract";

const RENAMED: Readonly<Record<string, keyof EngineContract>> = { vllm_version: "engine_version", nixl_version: "transfer_version", nixl_connector_version: "connector_version" };

const DEFAULTS: EngineContract = {
  engine_version: "",
  image_digest: "",
  transfer_version: "",
  connector_version: 0,
  model_architecture: "",
  model_dtype: "",
  kv_heads: 0,
  head_size: 0,
  hidden_layers: 0,
  attention_backend: "",
  kv_cache_dtype: "",
  cross_layers_blocks: null,
  hybrid_kv_cache_manager: null,
  connector: "NixlConnector",
  kv_role: "",
  transfer_mode: "",
  speculative_config: "",
  enforce_handshake_compat: true,
};

export interface DeclaredContract {
  readonly contract: EngineContract;
  /** `EngineContract.fingerprint()`: 16 hex digits. */
  readonly fingerprint: string;
  readonly engineVersion: string;
  /** `FleetConfig.contract_missing()`: fields left unset, which the contract gate reports as a skip. */
  readonly undeclared: ContractField[];
}

/** The loaded contract, or null when the document declares none. */
export function declaredContract(raw: unknown): DeclaredContract | null {
  if (raw == null || typeof raw !== "object" || Array.isArray(raw)) return null;
  const named: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) named[RENAMED[k] ?? k] = v;
  const contract = { ...DEFAULTS } as unknown as Record<string, unknown>;
  for (const k of Object.keys(DEFAULTS)) if (k in named) contract[k] = named[k];
  const loaded = contract as unknown as EngineContract;
  return { contract: loaded, fingerprint: contractFingerprint(loaded), engineVersion: String(loaded.engine_version), undeclared: undeclaredFields(loaded) };
}
