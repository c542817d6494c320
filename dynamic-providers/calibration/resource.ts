import * as pulumi from "@pulumi/pulumi";
import { providerShim } from "../shim";
import type { CalibrationInputs, CalibrationOutputs } from "./types";

export type CalibrationArgs = { [K in keyof CalibrationInputs]: pulumi.Input<CalibrationInputs[K]> };

export const calibrationProvider = providerShim("dynamic-providers/calibration/provider.ts");

type Measured = Omit<CalibrationOutputs, keyof CalibrationInputs>;

/**
 * Gate F's first-token deadline calibration: at least the configured completed samples per directed
 * path and input length, from the router host, and the deadline they support. It proposes; the
 * operator sets engine.first_token_timeout_s and preflight re-runs against the edited document.
 */
export class Calibration extends pulumi.dynamic.Resource {
  declare readonly fleetDocumentDigest: pulumi.Output<string>;
  declare readonly paths: pulumi.Output<Measured["paths"]>;
  declare readonly groups: pulumi.Output<Measured["groups"]>;
  declare readonly floorS: pulumi.Output<number>;
  declare readonly deadlineS: pulumi.Output<number>;
  declare readonly currentDeadlineS: pulumi.Output<number>;
  declare readonly sampledUnderBoundS: pulumi.Output<number>;
  declare readonly prefillS: pulumi.Output<number>;
  declare readonly clientTtftS: pulumi.Output<number>;
  declare readonly clientTtftRequirementS: pulumi.Output<number>;
  declare readonly fitsClientTtft: pulumi.Output<boolean>;
  declare readonly samples: pulumi.Output<number>;
  declare readonly failedAttempts: pulumi.Output<number>;
  declare readonly identities: pulumi.Output<Measured["identities"]>;
  declare readonly evidence: pulumi.Output<Measured["evidence"]>;
  /** With `calibration.adopt`: adopted from that file, or measured and which bindings did not hold. */
  declare readonly adoption: pulumi.Output<Measured["adoption"]>;
  declare readonly ranAt: pulumi.Output<string>;
  declare readonly wallSeconds: pulumi.Output<number>;

  constructor(name: string, args: CalibrationArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Measured, undefined> = {
      fleetDocumentDigest: undefined,
      paths: undefined,
      groups: undefined,
      floorS: undefined,
      deadlineS: undefined,
      currentDeadlineS: undefined,
      sampledUnderBoundS: undefined,
      prefillS: undefined,
      clientTtftS: undefined,
      clientTtftRequirementS: undefined,
      fitsClientTtft: undefined,
      samples: undefined,
      failedAttempts: undefined,
      identities: undefined,
      evidence: undefined,
      adoption: undefined,
      ranAt: undefined,
      wallSeconds: undefined,
    };
    super(calibrationProvider, name, { ...outputs, ...args }, pulumi.mergeOptions(opts, { additionalSecretOutputs: ["apiKey", "viaPrivateKey", "viaPassword"] }), "narwhal", "Calibration");
  }
}
