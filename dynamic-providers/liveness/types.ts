import type { LivenessService, LivenessState } from "../../lib/liveness";

export interface LivenessInputs {
  /** What the probe watches: its health endpoint and its words in a reason. */
  service: LivenessService;
  /** The engine's id, or the service's name on its host (`router`, `prometheus`). */
  name: string;
  hostAlias: string;
  /** The service's base URL, as the program reaches it. */
  url: string;
  /** A refresh's probe waits this long before it calls the service hung. */
  healthDeadlineS: number;
}

export interface LivenessOutputs extends LivenessInputs {
  /** Minted at each create: the service's process resource takes it as a trigger, so a new one restarts it. */
  epoch: string;
  /** What the last refresh saw; absent until one ran. */
  observedState?: LivenessState;
  observedDetail?: string;
  observedAt?: string;
}
