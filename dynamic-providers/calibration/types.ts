import type { CalibrationAdoptSource, CalibrationMismatch } from "../../lib/preflight/calibration-adopt";
import type { GroupResult } from "../../lib/preflight/calibration";
import type { Pair } from "../../lib/preflight/pairs";
import type { ScheduleMode } from "../../lib/preflight/schedule";
import type { StoredLogin } from "../../lib/ssh/stored-login";
import type { EngineIdentity } from "./sampler";

/** One engine as calibration measures it: its role, served context, transport and the generation it must be. */
export interface CalibrationEngine {
  engineId: string;
  role: "prefill" | "decode";
  pin: boolean;
  generationDigest: string;
  attestationDigest: string;
  launchDigest?: string;
  /** KV transport (`tcp` or `ucx_rdma`). */
  transport: string;
  /** The served context (`--max-model-len`) of this engine's launch plan. */
  maxModelLen: number;
}

export interface CalibrationInputs {
  stack: string;
  /** The fleet document the router loads: engine URLs, deadlines and the client TTFT (`slo.ttft_s`). */
  fleetDocument: Record<string, unknown>;
  model: string;
  /** How engines run: kind and image (the engine generation binds the rest). */
  runtime: { kind: string; image?: string };
  engines: CalibrationEngine[];
  inputLengths: number[];
  samplesPerGroup: number;
  /** The diagnostic first-token observation bound, seconds. */
  observationBoundS: number;
  maxFailuresPerGroup: number;
  routerOverheadS: number;
  schedule: ScheduleMode;
  apiKey: string;
  /** Probes run from the router host's network position when set. */
  via?: StoredLogin;
  viaPrivateKey?: string;
  viaPassword?: string;
  /**
   * A calibration measured before this stack (`calibration.adopt`) with the digest the program read:
   * create adopts it instead of sampling while every process it sampled still serves.
   */
  adopt?: CalibrationAdoptSource;
}

/** How create came by the deadline: adopted from an earlier calibration, or measured (and, with `adopt` set, why). */
export interface CalibrationAdoption {
  verdict: "adopted" | "measured";
  source: CalibrationAdoptSource;
  /** Every binding of the file that did not hold, each naming its field and engine; empty when adopted. */
  mismatches: CalibrationMismatch[];
  /** When the adopted samples were taken (the file's capture time). */
  capturedAt?: string;
}

export interface CalibrationOutputs extends CalibrationInputs {
  fleetDocumentDigest: string;
  /** Every role-permitted directed path sampled. */
  paths: Pair[];
  groups: GroupResult[];
  /** The largest group result; the deadline sits above it. */
  floorS: number;
  /** The proposed engine.first_token_timeout_s. */
  deadlineS: number;
  /** The deadline the fleet document carries now. */
  currentDeadlineS: number;
  /** The observation bound the samples were taken under. */
  sampledUnderBoundS: number;
  /** The largest measured prefill. */
  prefillS: number;
  /** deadline + prefill + router overhead, against the client's requirement `slo.ttft_s`. */
  clientTtftS: number;
  clientTtftRequirementS: number;
  fitsClientTtft: boolean;
  samples: number;
  failedAttempts: number;
  /** Each engine's served context and live process identity, the same before and after the samples. */
  identities: EngineIdentity[];
  evidence?: { relativePath: string; digest: string };
  /** Set when `adopt` was given: whether the calibration was adopted or measured, and why. */
  adoption?: CalibrationAdoption;
  ranAt: string;
  wallSeconds: number;
}
