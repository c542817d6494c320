import * as pulumi from "@pulumi/pulumi";
import type { CheckRuntime, RuntimeFindings } from "../../lib/image-check";
import { providerShim } from "../shim";
import type { CheckedIdentity, ImageCheckInputs, ImageCheckOutputs } from "./types";

export type ImageCheckArgs = { [K in keyof ImageCheckInputs]: pulumi.Input<ImageCheckInputs[K]> };

/** What Pulumi serialises into state as this resource's `__provider`: one relative path, nothing else. */
export const imageCheckProvider = providerShim("dynamic-providers/image-check/provider.ts");

/**
 * Gate C evidence that one engine's runtime can serve its plan: immutable runtime identity, pinned
 * package versions, connector resolution, DS layout when required, tokenizer construction with the
 * plan's trust setting, and `vllm_api_version`. Replaced when the plan hash (or the pins, runtime,
 * checkpoint dir) changes; its launch.json and every run's output stay in the evidence store.
 */
export class ImageCheck extends pulumi.dynamic.Resource {
  declare readonly engineId: pulumi.Output<string>;
  declare readonly planSha256: pulumi.Output<string>;
  declare readonly checkId: pulumi.Output<string>;
  declare readonly checkDigest: pulumi.Output<string>;
  declare readonly vllmApiVersion: pulumi.Output<string>;
  declare readonly identity: pulumi.Output<CheckedIdentity>;
  declare readonly findings: pulumi.Output<RuntimeFindings>;
  declare readonly checkedAt: pulumi.Output<string>;
  declare readonly evidence: pulumi.Output<{ relativePath: string; digest: string }>;
  declare readonly launchJson: pulumi.Output<{ relativePath: string; sha256: string }>;
  declare readonly log: pulumi.Output<{ relativePath: string; offset: number; sha256: string }>;

  constructor(name: string, args: ImageCheckArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<ImageCheckOutputs, keyof ImageCheckInputs>, undefined> = {
      checkId: undefined,
      checkDigest: undefined,
      vllmApiVersion: undefined,
      identity: undefined,
      findings: undefined,
      checkedAt: undefined,
      evidence: undefined,
      launchJson: undefined,
      log: undefined,
    };
    super(
      imageCheckProvider,
      name,
      { ...outputs, ...args },
      pulumi.mergeOptions(opts, { additionalSecretOutputs: ["privateKey", "password"] }),
      "narwhal",
      "ImageCheck",
    );
  }
}

/** The check's runtime from `FleetSpec.runtime`: both container backends check the same image. */
export function checkRuntimeOf(runtime: { kind: string; vllmCommand: string; image?: string; dockerCommand: string }): CheckRuntime {
  return runtime.kind === "native"
    ? { kind: "native", vllmCommand: runtime.vllmCommand }
    : { kind: "docker", image: runtime.image ?? "", dockerCommand: runtime.dockerCommand };
}
