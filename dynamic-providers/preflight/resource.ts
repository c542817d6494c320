import { dynamicResource, type ArgsOf } from "../declare";
import type { PreflightInputs, PreflightOutputs } from "./schema";

export type PreflightArgs = ArgsOf<PreflightInputs>;

/**
 * Gate F's preflight (narwhal-check's gates) against the fleet document the router will load, each
 * engine's current generation, attestation and profile: it fails the deployment when a gate fails (or,
 * with `strict`, when the run is degraded), so the router, which starts after it, never starts on a
 * fleet that did not pass. The run's status, skips and warnings are narwhal-check's.
 */
export class Preflight extends dynamicResource<PreflightInputs, PreflightOutputs>()({
  type: "Preflight",
  provider: "dynamic-providers/preflight/provider.ts",
  outputs: ["fleetDocumentDigest", "gates", "status", "narwhal", "skipped", "warnings", "transfers", "rounds", "evidence", "ranAt", "wallSeconds"],
  secretOutputs: ["apiKey", "viaPrivateKey", "viaPassword", "engineHostSecrets"],
}) {}
