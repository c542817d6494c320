import { dynamicResource } from "../declare";
import type { FabricGateInputs, FabricGateOutputs } from "./check";

/**
 * Gate D's decision over the whole mesh: the edge matrix (hosts × hosts, Gbit/s and verdict) as an
 * evidence record, and a failed `pulumi up` naming every edge below its budget or with an invalid figure.
 * What sends traffic (attestation, profiling, the router) depends on it.
 */
export class FabricGate extends dynamicResource<FabricGateInputs, FabricGateOutputs>()({
  type: "FabricGate",
  provider: "dynamic-providers/fabric-gate/provider.ts",
  outputs: ["matrix", "evidence"],
}) {}
