import { dynamicResource } from "../declare";
import type { ProfileStoreInputs, ProfileStoreOutputs } from "./schema";

/**
 * The fleet's profile store and `.samples.json` sidecar on the router host at `profiles.path`, in the
 * schema the pinned narwhal-inference reads, rebuilt from the recorded profiles whenever one changes.
 */
export class ProfileStore extends dynamicResource<ProfileStoreInputs, ProfileStoreOutputs>()({
  type: "ProfileStore",
  provider: "dynamic-providers/profile-store/provider.ts",
  outputs: ["storeDigest", "samplesPath", "samplesDigest", "count", "writtenAt"],
  secretOutputs: ["routerPrivateKey", "routerPassword"],
}) {}
