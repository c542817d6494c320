import * as pulumi from "@pulumi/pulumi";
import { providerShim } from "../shim";
import type { ReplicaAgreementInputs } from "./types";

export type ReplicaAgreementArgs = { [K in keyof ReplicaAgreementInputs]: pulumi.Input<ReplicaAgreementInputs[K]> };

/**
 * Gate A: replicas agree on checkpoint, accelerator product and TP shape. Engines depend on it (order
 * only, no values), so a disagreement stops every start while one host's change touches no other plan.
 */
export class ReplicaAgreement extends pulumi.dynamic.Resource {
  declare readonly modelTreeSha256: pulumi.Output<string>;
  declare readonly product: pulumi.Output<string | null>;
  declare readonly tensorParallelSize: pulumi.Output<number>;
  declare readonly checkedAt: pulumi.Output<string>;

  constructor(name: string, args: ReplicaAgreementArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      providerShim("dynamic-providers/replica-agreement/provider.ts"),
      name,
      { modelTreeSha256: undefined, product: undefined, tensorParallelSize: undefined, checkedAt: undefined, ...args },
      opts,
      "narwhal",
      "ReplicaAgreement",
    );
  }
}
