import type { FleetSpec } from "../config/types";
import type { EngineContract } from "../attestation/contract";
import type { RouterRestartPolicy } from "../engine/restart-scope";
import { withResume } from "../router/handoff";

/** Where one engine is reached, as the router and `narwhal-check` will reach it. */
export interface EngineEndpoint {
  readonly id: string;
  readonly url: string;
  readonly attestationUrl: string;
}

/** What the fleet runs on: one accelerator product and one TP shape for every replica. */
export interface FleetHardware {
  readonly accelerator: string;
  readonly acceleratorsPerEngine: number;
  readonly tensorParallel: number;
}

/** The environment variable the router reads the engine API key from; the key itself never lands in the document. */
export const ENGINE_API_KEY_ENV = "NARWHAL_ENGINE_API_KEY";

/**
 * The fleet document in the nested `narwhal.fleet` schema (version 2) that narwhal-inference 0.7.0's
 * loader accepts: model, measured hardware and TP shape, engine URL references, initial roles and
 * pins, initial latency targets and the profile path (runbook, Gate A's `config/fleet.json`). After
 * Gate E it also carries `engine_contract`, the contract every engine's sidecar attested, as
 * `finalize-fleet` writes it, and the router's `recovery`: the restart policy when it is narwhal's
 * `whole_wave` (which needs that contract; `individual` is narwhal's default and goes unwritten), and
 * `resume`, so a swapped router takes over the serving one's holds (lib/router/handoff.ts).
 */
export function fleetDocument(
  spec: FleetSpec,
  endpoints: ReadonlyArray<EngineEndpoint>,
  hardware: FleetHardware,
  opts: { profilesPath: string; firstTokenCalibrationPath?: string; engineContract?: EngineContract; restartPolicy?: RouterRestartPolicy["policy"] },
): Record<string, unknown> {
  const byId = new Map(endpoints.map((e) => [e.id, e]));
  return {
    schema: "narwhal.fleet",
    schema_version: 2,
    model: spec.model.servedName,
    hardware: {
      accelerator: hardware.accelerator,
      accelerators_per_engine: hardware.acceleratorsPerEngine,
      tensor_parallel: hardware.tensorParallel,
    },
    engines: spec.engines.map((e) => {
      const at = byId.get(e.id);
      if (!at) throw new Error(`fleet document: no endpoint for engine ${e.id}`);
      return { iid: e.id, url: at.url, attestation_url: at.attestationUrl, role: e.role, ...(e.pin ? { pin: true } : {}) };
    }),
    slo: { ttft_s: spec.slo.ttftS, tpot_s: spec.slo.tpotS },
    serving: { request_timeout_s: spec.slo.requestTimeoutS, prefill_timeout_s: spec.slo.prefillTimeoutS },
    engine: {
      first_token_timeout_s: spec.slo.firstTokenTimeoutS,
      first_token_calibration_path: opts.firstTokenCalibrationPath ?? "",
      health_timeout_s: spec.slo.healthTimeoutS,
      engine_api_key_env: ENGINE_API_KEY_ENV,
    },
    profiles: { path: opts.profilesPath },
    ...(opts.engineContract ? { engine_contract: { ...opts.engineContract } } : {}),
    ...(opts.engineContract ? { recovery: withResume(opts.restartPolicy === "whole_wave" ? { engine_restart_policy: "whole_wave" } : {}) } : {}),
  };
}
