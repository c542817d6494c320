import { dynamicResource, type ArgsOf } from "../declare";
import type { CacheCaptureInputs, CacheCaptureOutputs } from "./schema";

export type CacheCaptureArgs = ArgsOf<CacheCaptureInputs>;

/**
 * Gate C evidence of one engine's serving cache layout, per TP rank, taken from the live process whose
 * generation was proved: its startup log (read over the host's SSH login), its `/metrics` and the model's
 * config.json. Replaced when that generation (or the plan's cache expectations) changes; Gate D groups
 * engines by `cacheLayoutDigest` and attestation binds it.
 */
export class CacheCapture extends dynamicResource<CacheCaptureInputs, CacheCaptureOutputs>()({
  type: "CacheCapture",
  provider: "dynamic-providers/cache-capture/provider.ts",
  outputs: ["layout", "cacheLayoutDigest", "capturedAt", "sources", "evidence"],
  secretOutputs: ["apiKey", "privateKey", "password"],
}) {}
