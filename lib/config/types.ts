/** Types of the parsed, fully defaulted fleet config. Each field is described on its schema in schema/ (the source of docs/config.md). */
import type { z } from "zod";
import type * as s from "./schema/fleet-config";

type HostFields = z.output<typeof s.HostSchema>;

/** One SSH-reachable machine, with `user` and `fabricInterface` resolved. */
export type HostSpec = Omit<HostFields, "user" | "fabricInterface"> & {
  /** Login user: `hosts[].user`, else the user in `destination`, else `root`. */
  user: string;
  /** Fabric interface: `hosts[].fabricInterface`, else `fabric.interface`. */
  fabricInterface: string;
};

/** One vLLM engine, with its initial `role` resolved and its position in `engines`. */
export type EngineSpec = z.output<ReturnType<typeof s.engineSchema>> & {
  /** 0-based position in `engines`: the "lowest-numbered engine" is index 0. */
  index: number;
};

export type EngineOverrides = z.output<typeof s.EngineOverridesSchema>;
export type RdmaSpec = z.output<typeof s.RdmaSchema>;
export type ModelSpec = z.output<typeof s.ModelSchema>;
export type RuntimeSpec = z.output<typeof s.RuntimeSchema>;
export type LaunchPolicy = z.output<typeof s.LaunchSchema>;
export type SloSpec = z.output<typeof s.SloSchema>;
export type RouterSpec = z.output<typeof s.RouterSchema>;
export type ObservabilitySpec = z.output<typeof s.ObservabilitySchema>;
export type SshSpec = z.output<typeof s.SshSchema>;
export type FabricSpec = z.output<typeof s.FabricSchema>;
export type ProfilingSpec = z.output<typeof s.ProfilingSchema>;
export type AttestationSpec = z.output<typeof s.AttestationSchema>;
export type PreflightSpec = z.output<typeof s.PreflightSchema>;
export type CalibrationSpec = z.output<typeof s.CalibrationSchema>;
export type TrialSpec = z.output<typeof s.TrialSchema>;
export type EvidenceSpec = z.output<typeof s.EvidenceSchema>;
export type RolloutSpec = z.output<typeof s.RolloutSchema>;

/** The whole stack config after parsing, defaults and cross-field checks. */
export interface FleetSpec {
  /** SSH-reachable machines (`narwhal-fleet:hosts`). */
  hosts: HostSpec[];
  /** Engines in config order; `engines[0]` starts as prefill unless told otherwise. */
  engines: EngineSpec[];
  /** Served model and checkpoint. */
  model: ModelSpec;
  /** How engines run: native process or container. */
  runtime: RuntimeSpec;
  /** Fleet-wide launch policy (runbook defaults), overridden per engine by `engines[].overrides`. */
  launch: LaunchPolicy;
  /** Initial latency limits and router deadlines. */
  slo: SloSpec;
  /** Router placement and package. */
  router: RouterSpec;
  /** Prometheus and Grafana. */
  observability: ObservabilitySpec;
  /** SSH behaviour. */
  ssh: SshSpec;
  /** Fabric defaults and budget inputs. */
  fabric: FabricSpec;
  /** Profiling sweep settings. */
  profiling: ProfilingSpec;
  /** Gate E's sidecars. */
  attestation: AttestationSpec;
  /** Gate F's preflight: pair selection, repeats and schedule. */
  preflight: PreflightSpec;
  /** Gate F's first-token deadline calibration (opt-in). */
  calibration: CalibrationSpec;
  /** Gate G's capacity trial points. */
  trial: TrialSpec;
  /** Where the evidence records live. */
  evidence: EvidenceSpec;
  /** Rolling changes (lib/rollout). */
  rollout: RolloutSpec;
}
