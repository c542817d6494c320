import * as pulumi from "@pulumi/pulumi";
import { providerShim } from "../shim";
import type { HostDiscoveryInputs, HostDiscoveryOutputs } from "./types";
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
  declare readonly factsDigest: pulumi.Output<string>;
  declare readonly observedAt: pulumi.Output<string>;

  constructor(name: string, args: HostDiscoveryArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<HostDiscoveryOutputs, keyof HostDiscoveryInputs>, undefined> = {
      hostname: undefined,
      hostKey: undefined,
      hostKeyFingerprint: undefined,
      accelerators: undefined,
      fabricAddress: undefined,
      factsDigest: undefined,
      observedAt: undefined,
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
