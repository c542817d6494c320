import type { CacheExpectations, CacheLayout, CacheLayoutSourceKind } from "../../lib/engine/cache-layout";
import type { ProcessIdentity } from "../../lib/engine/generation";

/** What the capture is taken against (the proved generation) and how to reach the engine. */
export interface CacheCaptureInputs {
  engineId: string;
  hostAlias: string;
  url: string;
  /** EngineGeneration.generationDigest: the live process must still be this one. */
  generationDigest: string;
  planSha256: string;
  /** The runtime identity the generation was proved with (needed to recompute the live digest). */
  processIdentity: ProcessIdentity;
  /** The start command's trigger digest (components/runtime/start-key.ts): while it stands, a preview holds `processIdentity`. */
  processStartKey?: string;
  /** From the launch plan: block size, TP, dtype and cache dtype the engine must run. */
  expected: CacheExpectations;
  /** Secret: sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Where the per-rank detail comes from (lib/engine/layout-sources.ts); default "sim-endpoint". */
  layoutSource?: CacheLayoutSourceKind;
  /** Per-request timeout of the capture's probes (default 60 s). */
  probeTimeoutS?: number;
  /** When set, the capture is also written to runs/<stack>/evidence as an immutable record. */
  stack?: string;
}

export interface CacheCaptureResult {
  layout: CacheLayout;
  /** sha256 over TP size and the per-rank geometry. */
  cacheLayoutDigest: string;
  capturedAt: string;
  /** The evidence record of this capture, when a stack was given. */
  evidence?: { relativePath: string; digest: string };
}

export type CacheCaptureOutputs = CacheCaptureInputs & CacheCaptureResult;
