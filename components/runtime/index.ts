import * as pulumi from "@pulumi/pulumi";
import type { RuntimeSpec } from "../../lib/config/types";
import { sha256Json } from "../../lib/digest";
import { dockerCliProcess, dockerCliTriggers } from "./docker-cli";
import { dockerProcess, dockerTriggers } from "./docker";
import { nativeProcess, nativeTriggers } from "./native";
import type { EngineProcess, EngineProcessArgs } from "./types";

export { nativeProcess } from "./native";
export { dockerCliProcess } from "./docker-cli";
export { dockerProcess } from "./docker";
export * from "./types";

/** Runs the engine with the backend `runtime.kind` names; every backend returns the same shape. */
export function engineProcess(kind: RuntimeSpec["kind"], name: string, args: EngineProcessArgs, parent: pulumi.Resource): EngineProcess {
  if (args.runbookRun !== undefined && kind === "docker") {
    // The docker provider owns its container through Pulumi state; it cannot take over one it did not create.
    throw new Error(`engine ${name}: engines[].runbookRun (${args.runbookRun}) is supported with runtime.kind native or docker-cli, not docker`);
  }
  switch (kind) {
    case "native":
      return nativeProcess(name, args, parent);
    case "docker-cli":
      return dockerCliProcess(name, args, parent);
    case "docker":
      return dockerProcess(name, args, parent);
  }
}

/**
 * A digest of what replaces the engine's running process under `runtime.kind`: exactly its backend's
 * triggers, so whatever is keyed by it (the engine's drain) changes exactly when the process is replaced.
 */
export function processStopKey(kind: RuntimeSpec["kind"], args: Omit<EngineProcessArgs, "after">): pulumi.Output<string> {
  const triggers = kind === "native" ? nativeTriggers(args) : kind === "docker-cli" ? dockerCliTriggers(args) : dockerTriggers(args);
  return pulumi.all(triggers).apply(sha256Json);
}
