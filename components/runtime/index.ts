import type * as pulumi from "@pulumi/pulumi";
import type { RuntimeSpec } from "../../lib/config/types";
import { dockerCliProcess } from "./docker-cli";
import { dockerProcess } from "./docker";
import { nativeProcess } from "./native";
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
