import * as pulumi from "@pulumi/pulumi";
import { providerShim } from "../shim";
import type { DeploymentConfigInputs, DeploymentConfigOutputs } from "./types";

export type DeploymentConfigArgs = { [K in keyof DeploymentConfigInputs]: pulumi.Input<DeploymentConfigInputs[K]> };

/** Gate A's generated configuration (hosts map, known hosts, launch records and sources, fleet.json, deployment.env) as private evidence files. */
export class DeploymentConfig extends pulumi.dynamic.Resource {
  declare readonly configDigest: pulumi.Output<string>;
  declare readonly written: pulumi.Output<DeploymentConfigOutputs["written"]>;
  declare readonly record: pulumi.Output<DeploymentConfigOutputs["record"]>;

  constructor(name: string, args: DeploymentConfigArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      providerShim("dynamic-providers/deployment-config/provider.ts"),
      name,
      { configDigest: undefined, written: undefined, record: undefined, ...args },
      opts,
      "narwhal",
      "DeploymentConfig",
    );
  }
}
