import { dynamicResource, type ArgsOf } from "../declare";
import type { CalibrationInputs, CalibrationOutputs } from "./schema";

export type CalibrationArgs = ArgsOf<CalibrationInputs>;

/**
 * Gate F's first-token deadline calibration: at least the configured completed samples per directed
 * path and input length, from the router host, and the deadline they support. It proposes; the
 * operator sets engine.first_token_timeout_s and preflight re-runs against the edited document.
 */
export class Calibration extends dynamicResource<CalibrationInputs, CalibrationOutputs>()({
  type: "Calibration",
  provider: "dynamic-providers/calibration/provider.ts",
  outputs: ["fleetDocumentDigest", "paths", "groups", "floorS", "deadlineS", "currentDeadlineS", "sampledUnderBoundS", "prefillS", "clientTtftS", "clientTtftRequirementS", "fitsClientTtft", "samples", "failedAttempts", "identities", "evidence", "adoption", "reservation", "ranAt", "wallSeconds"],
  secretOutputs: ["apiKey", "viaPrivateKey", "viaPassword"],
}) {}
