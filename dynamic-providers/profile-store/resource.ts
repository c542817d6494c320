import * as pulumi from "@pulumi/pulumi";
import { providerShim } from "../shim";
import type { ProfileStoreInputs, ProfileStoreOutputs } from "./types";

export type ProfileStoreArgs = { [K in keyof ProfileStoreInputs]: pulumi.Input<ProfileStoreInputs[K]> };

export const profileStoreProvider = providerShim("dynamic-providers/profile-store/provider.ts");

/**
 * The fleet's profile store and `.samples.json` sidecar on the router host at `profiles.path`, in the
 * schema the pinned narwhal-inference reads, rebuilt from the recorded profiles whenever one changes.
 */
export class ProfileStore extends pulumi.dynamic.Resource {
  declare readonly path: pulumi.Output<string>;
  declare readonly storeDigest: pulumi.Output<string>;
  declare readonly samplesPath: pulumi.Output<string>;
  declare readonly samplesDigest: pulumi.Output<string>;
  declare readonly count: pulumi.Output<number>;
  declare readonly writtenAt: pulumi.Output<string>;

  constructor(name: string, args: ProfileStoreArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<ProfileStoreOutputs, keyof ProfileStoreInputs>, undefined> = {
      storeDigest: undefined,
      samplesPath: undefined,
      samplesDigest: undefined,
      count: undefined,
      writtenAt: undefined,
    };
    super(profileStoreProvider, name, { ...outputs, ...args }, pulumi.mergeOptions(opts, { additionalSecretOutputs: ["routerPrivateKey", "routerPassword"] }), "narwhal", "ProfileStore");
  }
}
