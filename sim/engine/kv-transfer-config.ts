/**
 * `--kv-transfer-config '<json>'`: vLLM's KVTransferConfig, restricted to the NixlConnector.
 *
 * Field names and defaults follow vLLM (kv_load_failure_policy "fail", kv_buffer_device "cuda", a random
 * uuid engine_id at every process start unless `engine_id` pins one) and the NIXL extra-config keys Narwhal's
 * launcher sets (backends, kv_lease_duration, enforce_handshake_compat, enable_cross_layers_blocks), plus
 * engine_ttl, which bounds how long a peer's NIXL state outlives its last read.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { ArgError } from "./errors";

const ROLES = ["kv_producer", "kv_consumer", "kv_both"] as const;
const ROLE_LIST = `['kv_producer', 'kv_consumer', 'kv_both']`;

const RawSchema = z.strictObject({
  kv_connector: z.string().nullish(),
  kv_role: z.string().nullish(),
  engine_id: z.string().min(1).nullish(),
  kv_buffer_device: z.string().default("cuda"),
  kv_buffer_size: z.number().optional(),
  kv_rank: z.number().int().nullish(),
  kv_parallel_size: z.number().int().optional(),
  kv_ip: z.string().optional(),
  kv_port: z.number().int().optional(),
  kv_connector_extra_config: z.record(z.string(), z.unknown()).default({}),
  kv_connector_module_path: z.string().nullish(),
  kv_load_failure_policy: z.enum(["recompute", "fail"]).default("fail"),
  enable_permute_local_kv: z.boolean().default(false),
});

const ExtraSchema = z.looseObject({
  backends: z.array(z.string()).default(["UCX"]),
  /** Seconds P keeps a finished prefill's blocks for D to read (scaled by timeScale in the simulator). */
  kv_lease_duration: z.number().positive().default(30),
  enforce_handshake_compat: z.boolean().default(true),
  enable_cross_layers_blocks: z.boolean().default(false),
  /** Seconds a remote engine's NIXL state may stay unread before the next new-engine handshake evicts it; <= 0 never. */
  engine_ttl: z.number().default(3600),
});

export interface KVTransferConfig {
  kvConnector: "NixlConnector";
  kvRole: (typeof ROLES)[number];
  engineId: string;
  /** Whether `engine_id` was given: the same id across restarts, so peers never handshake again (case B). */
  engineIdPinned: boolean;
  kvBufferDevice: string;
  kvLoadFailurePolicy: "recompute" | "fail";
  enablePermuteLocalKv: boolean;
  backends: string[];
  kvLeaseDurationS: number;
  enforceHandshakeCompat: boolean;
  enableCrossLayersBlocks: boolean;
  /** kv_connector_extra_config.engine_ttl (simulated seconds; <= 0 disables eviction). */
  engineTtlS: number;
  /** The JSON as given, for logs and the cache-layout capture. */
  raw: Record<string, unknown>;
}

/** Parses and validates the flag's JSON; errors are usage errors (exit 2) worded like vLLM's. */
export function parseKvTransferConfig(text: string): KVTransferConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ArgError(`argument --kv-transfer-config: Value ${text} cannot be converted to KVTransferConfig: ${(err as Error).message}`);
  }
  const parsed = RawSchema.safeParse(json);
  if (!parsed.success) {
    throw new ArgError(`argument --kv-transfer-config: invalid KVTransferConfig:\n${z.prettifyError(parsed.error)}`);
  }
  const raw = parsed.data;
  if (!raw.kv_connector) {
    throw new ArgError("argument --kv-transfer-config: kv_connector is required (the simulator models NixlConnector)");
  }
  if (!raw.kv_role) {
    throw new ArgError(`argument --kv-transfer-config: Please specify kv_role when kv_connector is set, supported roles are ${ROLE_LIST}`);
  }
  if (!(ROLES as readonly string[]).includes(raw.kv_role)) {
    throw new ArgError(`argument --kv-transfer-config: Unsupported kv_role: ${raw.kv_role}. Supported roles are ${ROLE_LIST}`);
  }
  if (raw.kv_connector !== "NixlConnector") {
    throw new ArgError(
      `argument --kv-transfer-config: kv_connector '${raw.kv_connector}' is not simulated; the engine simulator models only NixlConnector`,
    );
  }
  const extra = ExtraSchema.safeParse(raw.kv_connector_extra_config);
  if (!extra.success) {
    throw new ArgError(`argument --kv-transfer-config: invalid kv_connector_extra_config:\n${z.prettifyError(extra.error)}`);
  }
  return {
    kvConnector: "NixlConnector",
    kvRole: raw.kv_role as KVTransferConfig["kvRole"],
    engineId: raw.engine_id ?? randomUUID(),
    engineIdPinned: typeof raw.engine_id === "string",
    kvBufferDevice: raw.kv_buffer_device,
    kvLoadFailurePolicy: raw.kv_load_failure_policy,
    enablePermuteLocalKv: raw.enable_permute_local_kv,
    backends: extra.data.backends,
    kvLeaseDurationS: extra.data.kv_lease_duration,
    enforceHandshakeCompat: extra.data.enforce_handshake_compat,
    enableCrossLayersBlocks: extra.data.enable_cross_layers_blocks,
    engineTtlS: extra.data.engine_ttl,
    raw: json as Record<string, unknown>,
  };
}
