/**
 * The shape of each `narwhal-fleet:*` config key, with defaults. Rules that span fields or keys
 * (references, clashes, roles, TP fit) live in ../rules; these files only say what one value may be.
 */
import { z } from "zod";
import * as f from "../fields";
import { engineSchema } from "./engines";
import { HostSchema } from "./hosts";
import { LaunchSchema } from "./launch";
import { AttestationSchema, CalibrationSchema, PreflightSchema, FabricSchema, ModelSchema, ObservabilitySchema, ProfilingSchema, RouterSchema, RuntimeSchema, SloSchema, SshSchema } from "./sections";

export { HostSchema } from "./hosts";
export { engineSchema } from "./engines";
export { EngineOverridesSchema, LaunchSchema, RdmaSchema } from "./launch";
export * from "./sections";

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
} as const;

/** Every config key the parser reads, in the order problems are reported. */
export const CONFIG_KEYS = ["hosts", "engines", ...Object.keys(SECTIONS)] as readonly string[];

/** The whole config as one schema: the source of `FleetSpec`'s type (parsing goes section by section). */
export const FleetConfigSchema = f.strict(
  { hosts: z.array(HostSchema), engines: z.array(engineSchema(0)), ...SECTIONS },
  "an object of fleet config keys",
);
