import * as pulumi from "@pulumi/pulumi";
import type { LivenessState } from "../../lib/liveness";
import { providerShim } from "../shim";
import type { LivenessInputs, LivenessOutputs } from "./types";

export type LivenessArgs = { [K in keyof LivenessInputs]: pulumi.Input<LivenessInputs[K]> };

/**
 * Whether a service the program started (an engine, the router, Prometheus) still serves. A refresh
 * probes its health endpoint; a service found dead, hung or gone is replaced here (replace key
 * "serving", the probe's words as the reason), and the new epoch starts its process again in the same
 * `up`. A serving one keeps its epoch and is never touched.
 */
export class Liveness extends pulumi.dynamic.Resource {
  declare readonly epoch: pulumi.Output<string>;
  declare readonly observedState: pulumi.Output<LivenessState | undefined>;
  declare readonly observedDetail: pulumi.Output<string | undefined>;

  constructor(name: string, args: LivenessArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<LivenessOutputs, keyof LivenessInputs>, undefined> = {
      epoch: undefined,
      observedState: undefined,
      observedDetail: undefined,
      observedAt: undefined,
    };
    // Engines' liveness records were typed EngineLiveness before the router and Prometheus had one: the
    // alias keeps them (and their epochs), so no engine restarts on that account.
    const aliases = [{ type: "pulumi-nodejs:dynamic/narwhal:EngineLiveness" }];
    super(providerShim("dynamic-providers/liveness/provider.ts"), name, { ...outputs, ...args }, { ...opts, aliases: [...(opts?.aliases ?? []), ...aliases] }, "narwhal", "Liveness");
  }
}
