import { dynamicResource, type ArgsOf } from "../declare";
import type { AttestationInputs, AttestationOutputs } from "./schema";

export type AttestationArgs = ArgsOf<AttestationInputs>;

/**
 * Gate E evidence that one engine's sidecar attests the live process that was proved, running the
 * checked plan with the captured cache layout, and the contract derived from them
 * (`engine-attestation.json` in the evidence store). Replaced when the generation, plan, layout,
 * document or sidecar process changes, or when a refresh finds the sidecar attesting something else
 * (replace key "attestation"); a refresh that gets 503 shows `observedState: engine-changed`.
 */
export class Attestation extends dynamicResource<AttestationInputs, AttestationOutputs>()({
  type: "Attestation",
  provider: "dynamic-providers/attestation/provider.ts",
  outputs: ["attestationDigest", "launchDigest", "contract", "contractFingerprint", "processClock", "attestedAt", "evidence", "observedAttestation", "observedState", "observedDetail"],
}) {}
