import * as pulumi from "@pulumi/pulumi";
import type { FabricVerdict } from "../../lib/fabric/budget";
import type { LinkFingerprint } from "../../lib/fabric/fingerprint";
import { providerShim } from "../shim";
import type { EdgeEndpoint, EdgeMeasurement, FabricEdgeInputs, FabricEdgeOutputs, PathDigests } from "./types";

/** An end's fields are inputs of their own, so one unknown field (during preview) leaves the others known. */
export type EdgeEndpointArgs = { [K in keyof EdgeEndpoint]: pulumi.Input<EdgeEndpoint[K]> };
export type FabricEdgeArgs = { [K in Exclude<keyof FabricEdgeInputs, "source" | "destination">]: pulumi.Input<FabricEdgeInputs[K]> } & {
  source: EdgeEndpointArgs;
  destination: EdgeEndpointArgs;
};

/**
 * Gate D evidence for one directed pair of physical hosts: the iperf3 figure of KV's path from the
 * source host to the destination host, taken while the engines are idle, with the link fingerprint it
 * was taken against. Replaced when the path (hosts, addresses, interface, transport, MTU, route) moves;
 * a budget change only re-evaluates `verdict`.
 */
export class FabricEdge extends pulumi.dynamic.Resource {
  declare readonly edgeId: pulumi.Output<string>;
  declare readonly requiredGbps: pulumi.Output<number>;
  declare readonly measurement: pulumi.Output<EdgeMeasurement>;
  declare readonly fingerprint: pulumi.Output<{ forward: LinkFingerprint; return: LinkFingerprint }>;
  declare readonly measured: pulumi.Output<PathDigests>;
  declare readonly observed: pulumi.Output<PathDigests>;
  declare readonly verdict: pulumi.Output<FabricVerdict>;
  declare readonly verdictReason: pulumi.Output<string>;
  declare readonly marginGbps: pulumi.Output<number | null>;
  declare readonly evidence: pulumi.Output<{ relativePath: string; digest: string }>;

  constructor(name: string, args: FabricEdgeArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<FabricEdgeOutputs, keyof FabricEdgeInputs>, undefined> = {
      measurement: undefined,
      fingerprint: undefined,
      measured: undefined,
      observed: undefined,
      observedProblems: undefined,
      verdict: undefined,
      verdictReason: undefined,
      marginGbps: undefined,
      evidence: undefined,
    };
    super(
      providerShim("dynamic-providers/fabric-edge/provider.ts"),
      name,
      { ...outputs, ...args },
      pulumi.mergeOptions(opts, { additionalSecretOutputs: ["sourcePrivateKey", "sourcePassword", "destinationPrivateKey", "destinationPassword"] }),
      "narwhal",
      "FabricEdge",
    );
  }
}
