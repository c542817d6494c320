import * as pulumi from "@pulumi/pulumi";
import type { EdgeMatrix } from "../../lib/fabric/matrix";
import { providerShim } from "../shim";
import type { FabricGateInputs, FabricGateOutputs, GateEdgeInput } from "./types";

export type FabricGateArgs = { [K in keyof FabricGateInputs]: pulumi.Input<FabricGateInputs[K]> };

/**
 * Gate D's decision over the whole mesh: the edge matrix (hosts × hosts, Gbit/s and verdict) as an
 * evidence record, and a failed `pulumi up` naming every edge below its budget or with an invalid figure.
 * What sends traffic (attestation, profiling, the router) depends on it.
 */
export class FabricGate extends pulumi.dynamic.Resource {
  declare readonly edges: pulumi.Output<GateEdgeInput[]>;
  declare readonly matrix: pulumi.Output<EdgeMatrix>;
  declare readonly evidence: pulumi.Output<{ relativePath: string; digest: string }>;

  constructor(name: string, args: FabricGateArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<FabricGateOutputs, keyof FabricGateInputs>, undefined> = { matrix: undefined, evidence: undefined };
    super(providerShim("dynamic-providers/fabric-gate/provider.ts"), name, { ...outputs, ...args }, opts, "narwhal", "FabricGate");
  }
}
