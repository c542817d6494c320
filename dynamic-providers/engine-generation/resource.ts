import * as pulumi from "@pulumi/pulumi";
import type { ObservedState, ProcessIdentity } from "../../lib/engine/generation";
import { providerShim } from "../shim";
import type { EngineGenerationInputs, EngineGenerationOutputs } from "./types";

export type EngineGenerationArgs = { [K in keyof EngineGenerationInputs]: pulumi.Input<EngineGenerationInputs[K]> };

/** What Pulumi serialises into state as this resource's `__provider`: one relative path, nothing else. */
export const engineGenerationProvider = providerShim("dynamic-providers/engine-generation/provider.ts");

/**
 * Gate C evidence that one live engine process serves the checked image and plan: health, exact
 * version, served model, process identity and one deterministic completion, bound together by the
 * generation digest. Replaced when the plan, endpoint, expected version, served name or runtime identity
 * changes, or when a refresh finds another live process (replace key "generation").
 */
export class EngineGeneration extends pulumi.dynamic.Resource {
  declare readonly engineId: pulumi.Output<string>;
  declare readonly hostAlias: pulumi.Output<string>;
  declare readonly url: pulumi.Output<string>;
  declare readonly planSha256: pulumi.Output<string>;
  declare readonly processIdentity: pulumi.Output<ProcessIdentity>;
  declare readonly generationDigest: pulumi.Output<string>;
  declare readonly processStartTime: pulumi.Output<number>;
  declare readonly version: pulumi.Output<string>;
  declare readonly provedAt: pulumi.Output<string>;
  declare readonly completionText: pulumi.Output<string>;
  /** The record of this proof in runs/<stack>/evidence, when a stack was given. */
  declare readonly evidence: pulumi.Output<{ relativePath: string; digest: string } | undefined>;
  declare readonly observedGeneration: pulumi.Output<string | undefined>;
  declare readonly observedState: pulumi.Output<ObservedState | undefined>;
  declare readonly observedDetail: pulumi.Output<string | undefined>;

  constructor(name: string, args: EngineGenerationArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<EngineGenerationOutputs, keyof EngineGenerationInputs>, undefined> = {
      generationDigest: undefined,
      processStartTime: undefined,
      version: undefined,
      provedAt: undefined,
      completionText: undefined,
      evidence: undefined,
      observedGeneration: undefined,
      observedState: undefined,
      observedDetail: undefined,
      peerStarts: undefined,
      observedPeerStarts: undefined,
    };
    super(
      engineGenerationProvider,
      name,
      { ...outputs, ...args },
      pulumi.mergeOptions(opts, { additionalSecretOutputs: ["apiKey"] }),
      "narwhal",
      "EngineGeneration",
    );
  }
}
