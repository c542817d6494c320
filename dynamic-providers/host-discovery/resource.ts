import * as pulumi from "@pulumi/pulumi";
import { providerShim } from "../shim";
import type { FacetDigests, HostDiscoveryInputs, HostDiscoveryOutputs } from "./types";
import type { ModelRequirements } from "../../lib/discovery/model";
import type { RuntimeIdentity } from "../../lib/discovery/runtime";
import type { CheckpointManifest } from "../../lib/checkpoint";
import type { AcceleratorInventory } from "../../lib/discovery/accelerators";

export type HostDiscoveryArgs = { [K in keyof HostDiscoveryInputs]: pulumi.Input<HostDiscoveryInputs[K]> };

/**
 * Gate A evidence for one physical host: who it is (hostname, verified host key), what it exposes
 * (accelerators) and where its fabric address is. Replaced when anything it was observed through
 * changes; its host key is then pinned by every other resource that logs in to the host.
 */
export class HostDiscovery extends pulumi.dynamic.Resource {
  declare readonly hostname: pulumi.Output<string>;
  declare readonly hostKey: pulumi.Output<string>;
  declare readonly hostKeyFingerprint: pulumi.Output<string>;
  declare readonly accelerators: pulumi.Output<AcceleratorInventory>;
  declare readonly fabricAddress: pulumi.Output<string>;
  declare readonly model: pulumi.Output<ModelRequirements>;
  declare readonly runtime: pulumi.Output<RuntimeIdentity | null>;
  declare readonly checkpoint: pulumi.Output<CheckpointManifest>;
  declare readonly measured: pulumi.Output<FacetDigests>;
  declare readonly observed: pulumi.Output<FacetDigests>;
  declare readonly factsDigest: pulumi.Output<string>;
  declare readonly evidence: pulumi.Output<{ relativePath: string; digest: string }>;
  declare readonly observedAt: pulumi.Output<string>;

  constructor(name: string, args: HostDiscoveryArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<HostDiscoveryOutputs, keyof HostDiscoveryInputs>, undefined> = {
      hostname: undefined,
      hostKey: undefined,
      hostKeyFingerprint: undefined,
      accelerators: undefined,
      fabricAddress: undefined,
      model: undefined,
      runtime: undefined,
      checkpoint: undefined,
      measured: undefined,
      observed: undefined,
      factsDigest: undefined,
      evidence: undefined,
      observedAt: undefined,
      measuredHostKey: undefined,
      claim: undefined,
    };
    super(
      providerShim("dynamic-providers/host-discovery/provider.ts"),
      name,
      { ...outputs, ...args },
      pulumi.mergeOptions(opts, { additionalSecretOutputs: ["privateKey", "password"] }),
      "narwhal",
      "HostDiscovery",
    );
  }
}
