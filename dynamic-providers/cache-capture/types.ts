import type { CacheExpectations, CacheLayout } from "../../lib/engine/cache-layout";
import type { ProcessIdentity } from "../../lib/engine/generation";
import type { EngineLogSource } from "../../lib/engine/log-source";
import type { LogLine } from "../../lib/engine/startup-log";
import type { StoredLogin } from "../../lib/ssh/stored-login";

/** What the capture is taken against (the proved generation) and how to reach the engine and its host. */
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
  /** How to log in to the engine's host, pinned to the key discovery verified (stored without aliases: `hostAlias` names the host). */
  login: StoredLogin;
  /** Secret. */
  privateKey?: string;
  /** Secret. */
  password?: string;
  /** Where the engine's stdout and stderr go: a file on the host, or its container's log (lib/engine/log-source.ts). */
  engineLog: EngineLogSource;
  /** The checkpoint directory on the host: the model's config.json is read from it. */
  modelDir: string;
  /** Bound of each probe and each read on the host (default 60 s). */
  probeTimeoutS?: number;
  /** When set, the capture is also written to runs/<stack>/evidence as an immutable record. */
  stack?: string;
  /**
   * The engine's run folder on the host: the record lists the failed starts kept in its `attempts/`.
   * Read at create only, so it is in neither diff list: a moved folder alone re-captures nothing.
   */
  runDir?: string;
}

/** What the capture read on the host: the log lines each fact came from, and the model config's bytes. */
export interface CaptureSources {
  log: {
    /** The file, or the command that printed the container's log. */
    source: string;
    readBytes: number;
    totalBytes?: number;
    /** The API server's pid as the log shows it (inside a container, the container's own pid space). */
    apiServerPid: number;
    /** Every line a fact was read from, by number. */
    lines: LogLine[];
  };
  modelConfig: { path: string; sha256: string };
}

export interface CacheCaptureResult {
  layout: CacheLayout;
  /** sha256 over TP size and the per-rank geometry. */
  cacheLayoutDigest: string;
  capturedAt: string;
  /** What was read, line by line: the record's observations hold the same. */
  sources: CaptureSources;
  /** The evidence record of this capture, when a stack was given. */
  evidence?: { relativePath: string; digest: string };
}

export type CacheCaptureOutputs = CacheCaptureInputs & CacheCaptureResult;
