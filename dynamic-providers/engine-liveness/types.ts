import type { LivenessState } from "../../lib/engine/liveness";

export interface EngineLivenessInputs {
  engineId: string;
  hostAlias: string;
  /** The engine's endpoint, as its launch plan serves it. */
  url: string;
  /** A refresh's `/health` probe waits this long before it calls the engine hung. */
  healthDeadlineS: number;
}

export interface EngineLivenessOutputs extends EngineLivenessInputs {
  /** Minted at each create: the engine's process resource takes it as a trigger, so a new one restarts it. */
  epoch: string;
  /** What the last refresh saw; absent until one ran. */
  observedState?: LivenessState;
  observedDetail?: string;
  observedAt?: string;
}
