import { dynamicResource } from "../declare";
import type { InstallPresenceInputs, InstallPresenceOutputs } from "./check";

/**
 * Whether Gate B's install is still on its host. A refresh looks for it; one found gone (a folder
 * removed, a disk reimaged) makes this an update, which installs it again, and everything that runs from
 * the install waits on this, so the `up` that restarts them finds it there.
 */
export class InstallPresence extends dynamicResource<InstallPresenceInputs, InstallPresenceOutputs>()({
  type: "InstallPresence",
  provider: "dynamic-providers/install-presence/provider.ts",
  outputs: ["observedState", "observedDetail", "observedAt", "lastReinstall"],
  secretOutputs: ["credentials"],
}) {}
