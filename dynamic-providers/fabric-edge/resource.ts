import type * as pulumi from "@pulumi/pulumi";
import { dynamicResource, type ArgsOf } from "../declare";
import type { EdgeEndpoint, FabricEdgeInputs, FabricEdgeOutputs } from "./schema";

/** An end's fields are inputs of their own, so one unknown field (during preview) leaves the others known. */
export type EdgeEndpointArgs = ArgsOf<EdgeEndpoint>;
export type FabricEdgeArgs = { [K in Exclude<keyof FabricEdgeInputs, "source" | "destination">]: pulumi.Input<FabricEdgeInputs[K]> } & {
  source: EdgeEndpointArgs;
  destination: EdgeEndpointArgs;
};

/**
 * Gate D evidence for one directed pair of physical hosts: the iperf3 figure of KV's path from the
 * source host to the destination host, taken while the engines are idle (which the engines on both hosts
 * prove from their own counters: `reservation`), with the link fingerprint it was taken against. Replaced when the path (hosts, addresses, interface, transport, MTU, route) moves;
 * a budget change only re-evaluates `verdict`.
 */
export class FabricEdge extends dynamicResource<FabricEdgeInputs, FabricEdgeOutputs, FabricEdgeArgs>()({
  type: "FabricEdge",
  provider: "dynamic-providers/fabric-edge/provider.ts",
  outputs: ["measurement", "fingerprint", "measured", "observed", "observedProblems", "verdict", "verdictReason", "marginGbps", "evidence", "reservation"],
  secretOutputs: ["sourcePrivateKey", "sourcePassword", "destinationPrivateKey", "destinationPassword"],
}) {}
