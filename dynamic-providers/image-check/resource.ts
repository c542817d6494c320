import type { CheckRuntime } from "../../lib/image-check";
import { dynamicResource, type ArgsOf } from "../declare";
import type { ImageCheckInputs, ImageCheckOutputs } from "./schema";

export type ImageCheckArgs = ArgsOf<ImageCheckInputs>;

/**
 * Gate C evidence that one engine's runtime can serve its plan: immutable runtime identity, pinned
 * package versions, connector resolution, DS layout when required, tokenizer construction with the
 * plan's trust setting, and `vllm_api_version`. Replaced when the plan hash (or the pins, runtime,
 * checkpoint dir) changes; its launch.json and every run's output stay in the evidence store.
 */
export class ImageCheck extends dynamicResource<ImageCheckInputs, ImageCheckOutputs>()({
  type: "ImageCheck",
  provider: "dynamic-providers/image-check/provider.ts",
  outputs: ["checkId", "checkDigest", "vllmApiVersion", "identity", "findings", "checkedAt", "evidence", "launchJson", "log"],
  secretOutputs: ["privateKey", "password"],
}) {}

/** The check's runtime from `FleetSpec.runtime`: both container backends check the same image. */
export function checkRuntimeOf(runtime: { kind: string; vllmCommand: string; image?: string; dockerCommand: string }): CheckRuntime {
  return runtime.kind === "native"
    ? { kind: "native", vllmCommand: runtime.vllmCommand }
    : { kind: "docker", image: runtime.image ?? "", dockerCommand: runtime.dockerCommand };
}
