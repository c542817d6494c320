import * as pulumi from "@pulumi/pulumi";
import { providerShim } from "../shim";
import type { PreflightInputs, PreflightOutputs } from "./types";

export type PreflightArgs = { [K in keyof PreflightInputs]: pulumi.Input<PreflightInputs[K]> };

export const preflightProvider = providerShim("dynamic-providers/preflight/provider.ts");

/**
 * Gate F's preflight (narwhal-check's gates) against the fleet document the router will load, each
 * engine's current generation, attestation and profile: it fails the deployment when a gate fails (or,
 * with `strict`, when the run is degraded), so the router, which starts after it, never starts on a
 * fleet that did not pass. The run's status, skips and warnings are narwhal-check's.
 */
export class Preflight extends pulumi.dynamic.Resource {
  declare readonly fleetDocumentDigest: pulumi.Output<string>;
  declare readonly gates: pulumi.Output<PreflightOutputs["gates"]>;
  declare readonly status: pulumi.Output<PreflightOutputs["status"]>;
  declare readonly narwhal: pulumi.Output<PreflightOutputs["narwhal"]>;
  declare readonly skipped: pulumi.Output<PreflightOutputs["skipped"]>;
  declare readonly warnings: pulumi.Output<PreflightOutputs["warnings"]>;
  declare readonly transfers: pulumi.Output<PreflightOutputs["transfers"]>;
  declare readonly rounds: pulumi.Output<number>;
  declare readonly evidence: pulumi.Output<PreflightOutputs["evidence"]>;
  declare readonly ranAt: pulumi.Output<string>;
  declare readonly wallSeconds: pulumi.Output<number>;

  constructor(name: string, args: PreflightArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<PreflightOutputs, keyof PreflightInputs>, undefined> = {
      fleetDocumentDigest: undefined,
      gates: undefined,
      status: undefined,
      narwhal: undefined,
      skipped: undefined,
      warnings: undefined,
      transfers: undefined,
      rounds: undefined,
      evidence: undefined,
      ranAt: undefined,
      wallSeconds: undefined,
    };
    super(preflightProvider, name, { ...outputs, ...args }, pulumi.mergeOptions(opts, { additionalSecretOutputs: ["apiKey", "viaPrivateKey", "viaPassword"] }), "narwhal", "Preflight");
  }
}
