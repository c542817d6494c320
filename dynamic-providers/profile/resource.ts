import * as pulumi from "@pulumi/pulumi";
import type { ProfileRow, Sweep } from "../../lib/profiling";
import { providerShim } from "../shim";
import type { ProfileAdoption, ProfileFitErrors, ProfileFitTry, ProfileInputs, ProfileOutputs } from "./types";

export type ProfileArgs = { [K in keyof ProfileInputs]: pulumi.Input<ProfileInputs[K]> };

/** What Pulumi serialises into state as this resource's `__provider`: one relative path, nothing else. */
export const profileProvider = providerShim("dynamic-providers/profile/provider.ts");

/**
 * Gate F evidence: one engine's narwhal-profile curves, measured against its attested generation from
 * the router host's network position, with the raw samples kept as evidence. Replaced when the engine's
 * generation, attestation, plan, sweep or limit changes; an SLO edit is not an input.
 */
export class Profile extends pulumi.dynamic.Resource {
  declare readonly engineId: pulumi.Output<string>;
  declare readonly row: pulumi.Output<ProfileRow>;
  declare readonly profileDigest: pulumi.Output<string>;
  declare readonly bindingDigest: pulumi.Output<string>;
  declare readonly fitErrors: pulumi.Output<ProfileFitErrors>;
  declare readonly maxModelLen: pulumi.Output<number>;
  declare readonly effectiveSweep: pulumi.Output<Sweep>;
  declare readonly samples: pulumi.Output<{ relativePath: string; sha256: string }>;
  declare readonly evidence: pulumi.Output<{ relativePath: string; digest: string } | undefined>;
  declare readonly measuredAt: pulumi.Output<string>;
  declare readonly wallSeconds: pulumi.Output<number>;
  declare readonly adoption: pulumi.Output<ProfileAdoption | undefined>;
  /** Each sweep create took (a fit over the preflight's limits is measured again), with its evidence. */
  declare readonly fitTries: pulumi.Output<ProfileFitTry[]>;

  constructor(name: string, args: ProfileArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<ProfileOutputs, keyof ProfileInputs>, undefined> = {
      row: undefined,
      profileDigest: undefined,
      bindingDigest: undefined,
      fitErrors: undefined,
      maxModelLen: undefined,
      effectiveSweep: undefined,
      samples: undefined,
      evidence: undefined,
      measuredAt: undefined,
      wallSeconds: undefined,
      adoption: undefined,
      fitTries: undefined,
    };
    super(profileProvider, name, { ...outputs, ...args }, pulumi.mergeOptions(opts, { additionalSecretOutputs: ["apiKey", "viaPrivateKey", "viaPassword"] }), "narwhal", "Profile");
  }
}
