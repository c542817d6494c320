import * as pulumi from "@pulumi/pulumi";
import type { LivenessState } from "../../lib/engine/liveness";
import { providerShim } from "../shim";
import type { EngineLivenessInputs, EngineLivenessOutputs } from "./types";

export type EngineLivenessArgs = { [K in keyof EngineLivenessInputs]: pulumi.Input<EngineLivenessInputs[K]> };

/**
 * Whether the engine the program started still serves. A refresh probes `/health`; an engine found dead,
 * hung or gone is replaced here (replace key "serving", the probe's words as the reason), and the new
 * epoch restarts its process in the same `up`. A serving engine keeps its epoch and is never touched.
 */
export class EngineLiveness extends pulumi.dynamic.Resource {
  declare readonly epoch: pulumi.Output<string>;
  declare readonly observedState: pulumi.Output<LivenessState | undefined>;
  declare readonly observedDetail: pulumi.Output<string | undefined>;

  constructor(name: string, args: EngineLivenessArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<EngineLivenessOutputs, keyof EngineLivenessInputs>, undefined> = {
      epoch: undefined,
      observedState: undefined,
      observedDetail: undefined,
      observedAt: undefined,
    };
    super(providerShim("dynamic-providers/engine-liveness/provider.ts"), name, { ...outputs, ...args }, opts, "narwhal", "EngineLiveness");
  }
}
