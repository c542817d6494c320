import { dynamicResource } from "../declare";
import type { FilesPresenceInputs, FilesPresenceOutputs } from "./check";

/**
 * Whether the files some commands wrote on a host are still there (monitoring's configuration and
 * targets). A refresh looks for each; one found gone replaces this (replace key "files", the look's words
 * as the reason). The new id, which holds a new epoch, is a trigger of every command that writes them,
 * so the same `up` writes them all again before what reads them starts.
 */
export class FilesPresence extends dynamicResource<FilesPresenceInputs, FilesPresenceOutputs>()({
  type: "FilesPresence",
  provider: "dynamic-providers/files-presence/provider.ts",
  outputs: ["epoch", "observedState", "observedDetail", "observedAt"],
  secretOutputs: ["credentials"],
}) {}
