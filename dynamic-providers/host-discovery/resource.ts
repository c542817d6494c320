import { dynamicResource, type ArgsOf } from "../declare";
import type { HostDiscoveryInputs, HostDiscoveryOutputs } from "./schema";

export type HostDiscoveryArgs = ArgsOf<HostDiscoveryInputs>;

/**
 * Gate A evidence for one physical host: who it is (hostname, verified host key), what it exposes
 * (accelerators) and where its fabric address is. Replaced when anything it was observed through
 * changes; its host key is then pinned by every other resource that logs in to the host.
 */
export class HostDiscovery extends dynamicResource<HostDiscoveryInputs, HostDiscoveryOutputs>()({
  type: "HostDiscovery",
  provider: "dynamic-providers/host-discovery/provider.ts",
  outputs: ["hostname", "hostKey", "hostKeyFingerprint", "accelerators", "fabricAddress", "model", "runtime", "rdma", "checkpoint", "measured", "observed", "factsDigest", "evidence", "observedAt", "measuredHostKey", "claim"],
  secretOutputs: ["privateKey", "password"],
}) {}
