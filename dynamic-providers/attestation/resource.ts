import * as pulumi from "@pulumi/pulumi";
import type { EngineContract } from "../../lib/attestation";
import { providerShim } from "../shim";
import type { AttestationInputs, AttestationOutputs, AttestationState } from "./types";

export type AttestationArgs = { [K in keyof AttestationInputs]: pulumi.Input<AttestationInputs[K]> };

/** What Pulumi serialises into state as this resource's `__provider`: one relative path, nothing else. */
export const attestationProvider = providerShim("dynamic-providers/attestation/provider.ts");

/**
 * Gate E evidence that one engine's sidecar attests the live process that was proved, running the
 * checked plan with the captured cache layout, and the contract derived from them
 * (`engine-attestation.json` in the evidence store). Replaced when the generation, plan, layout,
 * document or sidecar process changes, or when a refresh finds the sidecar attesting something else
 * (replace key "attestation"); a refresh that gets 503 shows `observedState: engine-changed`.
 */
export class Attestation extends pulumi.dynamic.Resource {
  declare readonly engineId: pulumi.Output<string>;
  declare readonly url: pulumi.Output<string>;
  declare readonly documentDigest: pulumi.Output<string>;
  declare readonly generationDigest: pulumi.Output<string>;
  declare readonly attestationDigest: pulumi.Output<string>;
  declare readonly launchDigest: pulumi.Output<string>;
  declare readonly contract: pulumi.Output<EngineContract>;
  declare readonly contractFingerprint: pulumi.Output<string>;
  declare readonly processClock: pulumi.Output<number>;
  declare readonly attestedAt: pulumi.Output<string>;
  declare readonly evidence: pulumi.Output<{ relativePath: string; digest: string } | undefined>;
  declare readonly runbookDocument: pulumi.Output<{ run: string; reason: string } | undefined>;
  declare readonly observedAttestation: pulumi.Output<string | undefined>;
  declare readonly observedState: pulumi.Output<AttestationState | undefined>;
  declare readonly observedDetail: pulumi.Output<string | undefined>;

  constructor(name: string, args: AttestationArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<AttestationOutputs, keyof AttestationInputs>, undefined> = {
      attestationDigest: undefined,
      launchDigest: undefined,
      contract: undefined,
      contractFingerprint: undefined,
      processClock: undefined,
      attestedAt: undefined,
      evidence: undefined,
      observedAttestation: undefined,
      observedState: undefined,
      observedDetail: undefined,
    };
    super(attestationProvider, name, { ...outputs, ...args }, opts, "narwhal", "Attestation");
  }
}
