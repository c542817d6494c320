/**
 * The fleet config schema: the plain `narwhal-fleet:*` stack config keys, parsed once into a fully
 * defaulted `FleetSpec`. Pure TypeScript; secrets are separate Pulumi secret keys and never pass here.
 */
export { parseFleetConfig } from "./parse";
export { FleetConfigError } from "./errors";
export type { ConfigIssue } from "./errors";
export { RUNBOOK_DEFAULTS } from "./defaults";
export { resolveTensorParallelSize, tensorParallelFits } from "./rules/engines";
export type {
  FleetSpec,
  HostSpec,
  EngineSpec,
  EngineOverrides,
  RdmaSpec,
  ModelSpec,
  RuntimeSpec,
  LaunchPolicy,
  SloSpec,
  RouterSpec,
  ObservabilitySpec,
  SshSpec,
  FabricSpec,
  ProfilingSpec,
  AttestationSpec,
  PreflightSpec,
  CalibrationSpec,
  TrialSpec,
} from "./types";
