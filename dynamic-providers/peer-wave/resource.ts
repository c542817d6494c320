import { dynamicResource } from "../declare";
import type { PeerWaveInputs, PeerWaveOutputs } from "./check";

/**
 * `runtime.restartKvPeers`: one per KV component, between the engines' runtimes and their generations.
 * A refresh that finds a member restarted (or an up that starts one anew) makes it an update, which
 * restarts every other member at once before any generation is proved again (vLLM #49238).
 */
export class PeerWave extends dynamicResource<PeerWaveInputs, PeerWaveOutputs>()({
  type: "PeerWave",
  provider: "dynamic-providers/peer-wave/provider.ts",
  outputs: ["recorded", "observedStarts", "lastWave"],
  secretOutputs: ["credentials", "apiKey"],
}) {}
