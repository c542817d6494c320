/** Liveness inputs: the endpoint a refresh probes, and for how long. */
import { z } from "zod";
import { httpBaseUrl, oneOf, seconds, text } from "../../lib/provider-fields";
import { HEALTH_PATH, type LivenessService, type LivenessState } from "../../lib/liveness";

export const livenessInputs = z.object({
  /** What the probe watches: its health endpoint and its words in a reason. */
  service: oneOf("service", Object.keys(HEALTH_PATH) as [LivenessService, ...LivenessService[]]),
  /** The engine's id, or the service's name on its host (`router`, `prometheus`). */
  name: text("name"),
  hostAlias: text("hostAlias"),
  /** The service's base URL, as the program reaches it. */
  url: httpBaseUrl("url", "the service's"),
  /** A refresh's probe waits this long before it calls the service hung. */
  healthDeadlineS: seconds("healthDeadlineS"),
});

export type LivenessInputs = z.infer<typeof livenessInputs>;

export interface LivenessOutputs extends LivenessInputs {
  /** Minted at each create: the service's process resource takes it as a trigger, so a new one restarts it. */
  epoch: string;
  /** What the last refresh saw; absent until one ran. */
  observedState?: LivenessState;
  observedDetail?: string;
  observedAt?: string;
}
