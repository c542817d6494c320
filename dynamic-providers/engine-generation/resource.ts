import type * as pulumi from "@pulumi/pulumi";
import { dynamicResource, type ArgsOf } from "../declare";
import type { EngineGenerationInputs, EngineGenerationOutputs } from "./schema";

type Peer = NonNullable<EngineGenerationInputs["peers"]>[string];

/**
 * As declared, but each peer's fields are inputs of their own: one peer not known in a preview leaves the
 * others known. The list itself may wait on the component's restart scope, which decides whether there is one.
 */
export type EngineGenerationArgs = Omit<ArgsOf<EngineGenerationInputs>, "peers"> & {
  peers?: pulumi.Input<Record<string, { [K in keyof Peer]: pulumi.Input<Peer[K]> }> | undefined>;
};

/**
 * Gate C evidence that one live engine process serves the checked image and plan: health, exact
 * version, served model, process identity and one deterministic completion, bound together by the
 * generation digest. Replaced when the plan, endpoint, expected version, served name or runtime identity
 * changes, or when a refresh finds another live process (replace key "generation").
 */
export class EngineGeneration extends dynamicResource<EngineGenerationInputs, EngineGenerationOutputs, EngineGenerationArgs>()({
  type: "EngineGeneration",
  provider: "dynamic-providers/engine-generation/provider.ts",
  outputs: ["generationDigest", "processStartTime", "version", "provedAt", "completionText", "evidence", "observedGeneration", "observedState", "observedDetail", "peerStarts", "observedPeerStarts"],
  secretOutputs: ["apiKey"],
}) {}
