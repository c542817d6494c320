import type * as pulumi from "@pulumi/pulumi";
import type { RuntimeSpec } from "../../lib/config";
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
  switch (kind) {
    case "native":
      return nativeProcess(name, args, parent);
    case "docker-cli":
      return dockerCliProcess(name, args, parent);
    case "docker":
      return dockerProcess(name, args, parent);
  }
}
