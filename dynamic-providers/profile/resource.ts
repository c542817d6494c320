import { dynamicResource, type ArgsOf } from "../declare";
import type { ProfileInputs, ProfileOutputs } from "./schema";

export type ProfileArgs = ArgsOf<ProfileInputs>;

/**
 * Gate F evidence: one engine's narwhal-profile curves, measured against its attested generation from
 * the router host's network position, with the raw samples kept as evidence. Replaced when the engine's
 * generation, attestation, plan, sweep or limit changes; an SLO edit is not an input.
 */
export class Profile extends dynamicResource<ProfileInputs, ProfileOutputs>()({
  type: "Profile",
  provider: "dynamic-providers/profile/provider.ts",
  outputs: ["row", "profileDigest", "bindingDigest", "fitErrors", "maxModelLen", "effectiveSweep", "samples", "evidence", "measuredAt", "wallSeconds", "adoption", "fitTries", "reservation"],
  secretOutputs: ["apiKey", "viaPrivateKey", "viaPassword"],
}) {}
