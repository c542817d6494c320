import { dynamicResource } from "../declare";
import type { EngineDrainInputs, EngineDrainOutputs } from "./check";

/**
 * Drains an engine on the serving router (lib/router/drain.ts) each time its process is about to be
 * replaced: it updates exactly when the process is replaced (the same triggers), and the process waits
 * for it.
 */
export class EngineDrain extends dynamicResource<EngineDrainInputs, EngineDrainOutputs>()({
  type: "EngineDrain",
  provider: "dynamic-providers/engine-drain/provider.ts",
  outputs: ["lastDrain"],
  secretOutputs: ["credentials"],
}) {}
