/**
 * The document narwhal's `attestation_contract generate` writes into a runbook launch directory
 * (`engine-attestation.json`, vLLM backend `engine_document`): the contract, each field's source as
 * `<file> sha256:<hex>` in the launch directory, and the launcher's own launch record. Used where a
 * test stands in for the runbook's sidecar.
 */
import { createHash } from "node:crypto";
import type { EngineContract } from "../../../lib/attestation/contract";

/** The launch-directory file narwhal names as each contract field's source. */
const SOURCE_FILES: Record<string, string> = {
  engine_version: "version.json",
  transfer_version: "launch.json",
  connector_version: "nixl-connector-version.json",
  model_architecture: "model-dimensions.json",
  model_dtype: "launch.json",
  kv_heads: "model-dimensions.json",
  head_size: "model-dimensions.json",
  hidden_layers: "model-dimensions.json",
  attention_backend: "startup-attestation.log",
  kv_cache_dtype: "launch.json",
  cross_layers_blocks: "cache-registration.json",
  hybrid_kv_cache_manager: "cache-layout.json",
  connector: "launch.json",
  kv_role: "launch.json",
  transfer_mode: "transfer-mode.json",
  speculative_config: "launch.json",
  enforce_handshake_compat: "handshake-policy.json",
};

/** The runbook document of a native engine with `contract`, launched from `run` with serving `args`. */
export function runbookAttestationDocument(contract: EngineContract, run: string, args: ReadonlyArray<string>): Record<string, unknown> {
  const digestOf = (file: string) => createHash("sha256").update(`${run}/${file}`).digest("hex");
  return {
    schema: "narwhal.attestation",
    schema_version: 1,
    contract,
    sources: Object.fromEntries(Object.entries(SOURCE_FILES).map(([field, file]) => [field, `${run}/${file} sha256:${digestOf(file)}`])),
    launch: {
      args: [...args],
      image_id: "",
      expected_packages: { nixl: contract.transfer_version, vllm: contract.engine_version },
      model_config_sha256: "c0".repeat(32),
      model_revision: "",
      launch_sha256: "",
      launcher_code_sha256: "d".repeat(64),
      cache_capture_code_sha256: "e".repeat(64),
      ucx_version: "",
      peer_release: false,
    },
  };
}
