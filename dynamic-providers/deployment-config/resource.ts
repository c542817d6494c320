import { dynamicResource } from "../declare";
import type { DeploymentConfigInputs, DeploymentConfigOutputs } from "./check";

/** Gate A's generated configuration (hosts map, known hosts, launch records and sources, fleet.json, deployment.env) as private evidence files. */
export class DeploymentConfig extends dynamicResource<DeploymentConfigInputs, DeploymentConfigOutputs>()({
  type: "DeploymentConfig",
  provider: "dynamic-providers/deployment-config/provider.ts",
  outputs: ["configDigest", "written", "record"],
}) {}
