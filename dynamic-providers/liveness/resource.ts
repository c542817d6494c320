import { dynamicResource } from "../declare";
import type { LivenessInputs, LivenessOutputs } from "./check";

/**
 * Whether a service the program started (an engine, the router, Prometheus) still serves. A refresh
 * probes its health endpoint; a service found dead, hung or gone is replaced here (replace key
 * "serving", the probe's words as the reason), and the new epoch starts its process again in the same
 * `up`. A serving one keeps its epoch and is never touched.
 */
export class Liveness extends dynamicResource<LivenessInputs, LivenessOutputs>()({
  type: "Liveness",
  provider: "dynamic-providers/liveness/provider.ts",
  outputs: ["epoch", "observedState", "observedDetail", "observedAt"],
  // Engines' liveness records were typed EngineLiveness before the router and Prometheus had one: the
  // alias keeps them (and their epochs), so no engine restarts on that account.
  aliases: [{ type: "pulumi-nodejs:dynamic/narwhal:EngineLiveness" }],
}) {}
