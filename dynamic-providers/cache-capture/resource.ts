import * as pulumi from "@pulumi/pulumi";
import type { CacheLayout } from "../../lib/engine/cache-layout";
import { providerShim } from "../shim";
import type { CacheCaptureInputs, CacheCaptureOutputs } from "./types";

export type CacheCaptureArgs = { [K in keyof CacheCaptureInputs]: pulumi.Input<CacheCaptureInputs[K]> };

/** What Pulumi serialises into state as this resource's `__provider`: one relative path, nothing else. */
export const cacheCaptureProvider = providerShim("dynamic-providers/cache-capture/provider.ts");

/**
 * Gate C evidence of one engine's serving cache layout, per TP rank, taken from the live process whose
 * generation was proved. Replaced when that generation (or the plan's cache expectations) changes; Gate D
 * groups engines by `cacheLayoutDigest` and attestation binds it.
 */
export class CacheCapture extends pulumi.dynamic.Resource {
  declare readonly engineId: pulumi.Output<string>;
  declare readonly generationDigest: pulumi.Output<string>;
  declare readonly layout: pulumi.Output<CacheLayout>;
  declare readonly cacheLayoutDigest: pulumi.Output<string>;
  declare readonly capturedAt: pulumi.Output<string>;
  /** The record of this capture in runs/<stack>/evidence, when a stack was given. */
  declare readonly evidence: pulumi.Output<{ relativePath: string; digest: string } | undefined>;

  constructor(name: string, args: CacheCaptureArgs, opts?: pulumi.CustomResourceOptions) {
    const outputs: Record<keyof Omit<CacheCaptureOutputs, keyof CacheCaptureInputs>, undefined> = {
      layout: undefined,
      cacheLayoutDigest: undefined,
      capturedAt: undefined,
      evidence: undefined,
    };
    super(
      cacheCaptureProvider,
      name,
      { ...outputs, ...args },
      pulumi.mergeOptions(opts, { additionalSecretOutputs: ["apiKey"] }),
      "narwhal",
      "CacheCapture",
    );
  }
}
