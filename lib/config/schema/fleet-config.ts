/**
 * The shape of each `narwhal-fleet:*` config key, with defaults. Rules that span fields or keys
 * (references, clashes, roles, TP fit) live in ../rules; these files only say what one value may be.
 */
import { z } from "zod";
import * as f from "../fields";
import { engineSchema } from "./engines";
import { HostSchema } from "./hosts";
import { LaunchSchema } from "./launch";
import { AttestationSchema, CalibrationSchema, EvidenceSchema, RolloutSchema, TrialSchema, PreflightSchema, FabricSchema, ModelSchema, ObservabilitySchema, ProfilingSchema, RouterSchema, RuntimeSchema, SloSchema, SshSchema } from "./sections";

export { HostSchema } from "./hosts";
export { engineSchema } from "./engines";
export { EngineOverridesSchema, LaunchSchema, RdmaSchema } from "./launch";
export * from "./sections";
export { CredentialKeysSchema } from "./credentials";

/** The object sections, by config key; `hosts` and `engines` are lists, parsed element by element. */
export const SECTIONS = {
  model: ModelSchema,
  runtime: RuntimeSchema,
  launch: LaunchSchema,
  slo: SloSchema,
  router: RouterSchema,
  observability: ObservabilitySchema,
  ssh: SshSchema,
  fabric: FabricSchema,
  profiling: ProfilingSchema,
  attestation: AttestationSchema,
  preflight: PreflightSchema,
  calibration: CalibrationSchema,
  trial: TrialSchema,
  evidence: EvidenceSchema,
  rollout: RolloutSchema,
} as const;

/** Every config key the parser reads, in the order problems are reported. */
export const CONFIG_KEYS = ["hosts", "engines", ...Object.keys(SECTIONS)] as readonly string[];

/**
 * The whole config as one schema, which docs/config.md is generated from (parsing goes section by
 * section). Sections other than `model` are `prefault({})` here because the parser reads a section the
 * stack leaves out as `{}`: each of their keys has a default or may stay unset.
 */
export const FleetConfigSchema = f.strict(
  {
    hosts: z.array(HostSchema).describe("The SSH-reachable machines the fleet runs on; at least one."),
    engines: z
      .array(engineSchema(0))
      .describe("The vLLM engines, in order: at least two, a prefill producer and a decode consumer. The first is `engines[0]`, the lowest-numbered engine."),
    model: ModelSchema,
    runtime: RuntimeSchema.prefault({}),
    launch: LaunchSchema.prefault({}),
    slo: SloSchema.prefault({}),
    router: RouterSchema.prefault({}),
    observability: ObservabilitySchema.prefault({}),
    ssh: SshSchema.prefault({}),
    fabric: FabricSchema.prefault({}),
    profiling: ProfilingSchema.prefault({}),
    attestation: AttestationSchema.prefault({}),
    preflight: PreflightSchema.prefault({}),
    calibration: CalibrationSchema.prefault({}),
    trial: TrialSchema.prefault({}),
    evidence: EvidenceSchema.prefault({}),
    rollout: RolloutSchema.prefault({}),
  },
  "an object of fleet config keys",
);
