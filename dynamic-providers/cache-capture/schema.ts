/** CacheCapture's inputs as one zod schema (values unknown until apply are judged on the up), the types it produces, and the outputs. */
import { z } from "zod";
import type { CacheLayout } from "../../lib/engine/cache-layout";
import type { EngineLogSource } from "../../lib/engine/log-source";
import type { LogLine } from "../../lib/engine/startup-log";
import { absolutePath, filled, got, positiveWhole, seconds } from "../../lib/provider-fields";
import { hasUnknown } from "../../lib/unknown";
import { processIdentitySchema } from "../engine-generation/schema";
import { storedLogin } from "../image-check/schema";
import { across, fieldsOf, inOrder, isFilled } from "../../lib/input-rules";

/** Where the engine's stdout and stderr go: log files (absolute paths) on the host, or its container's log (lib/engine/log-source.ts). */
const engineLog = z.custom<EngineLogSource>().superRefine((given, ctx) => {
  const log = fieldsOf(given);
  const bad = (message: string) => ctx.addIssue({ code: "custom", message });
  if (log.kind === "files") {
    const paths = log.paths;
    if (!Array.isArray(paths) || paths.length === 0 || !paths.every((p) => typeof p === "string" && p.startsWith("/"))) {
      bad(`engineLog.paths must list the log files' absolute paths on the host, got ${JSON.stringify(paths ?? null)}`);
    }
  } else if (log.kind === "container") {
    if (!isFilled(log.dockerCommand)) bad(`engineLog.dockerCommand must name the host's docker client, got ${JSON.stringify(log.dockerCommand ?? null)}`);
  } else {
    bad(`engineLog.kind must be "files" or "container", got ${JSON.stringify(log.kind ?? null)}`);
  }
});

const word = (k: string) => filled(got(k, "must be a non-empty string"));

/** What the capture is taken against (the proved generation) and how to reach the engine and its host. */
const fields = z.object({
  engineId: z.string(),
  hostAlias: z.string(),
  url: z.string(),
  /** EngineGeneration.generationDigest: the live process must still be this one. */
  generationDigest: z.string(),
  planSha256: z.string(),
  /** The runtime identity the generation was proved with (needed to recompute the live digest). */
  processIdentity: processIdentitySchema,
  /** The start command's trigger digest (components/runtime/start-key.ts): while it stands, a preview holds `processIdentity`. */
  processStartKey: z.string().optional(),
  /** From the launch plan: block size, TP, dtype and cache dtype the engine must run; a missing plan is refused field by field, as an empty one is. */
  expected: z.preprocess(
    (e) => (typeof e === "object" && e !== null ? e : {}),
    z.object({
      blockSize: positiveWhole("expected.blockSize"),
      tensorParallelSize: positiveWhole("expected.tensorParallelSize"),
      dtype: word("expected.dtype"),
      kvCacheDtype: word("expected.kvCacheDtype"),
    }),
  ),
  /** Secret: sent as `Authorization: Bearer`. */
  apiKey: z.string().optional(),
  /** How to log in to the engine's host, pinned to the key discovery verified (stored without aliases: `hostAlias` names the host). */
  login: storedLogin(),
  /** Secret. */
  privateKey: z.string().optional(),
  /** Secret. */
  password: z.string().optional(),
  engineLog,
  /** The checkpoint directory on the host: the model's config.json is read from it. */
  modelDir: absolutePath("modelDir"),
  /** Bound of each probe and each read on the host (default 60 s). */
  probeTimeoutS: seconds("probeTimeoutS").optional(),
  /** When set, the capture is also written to runs/<stack>/evidence as an immutable record. */
  stack: z.string().optional(),
  /**
   * The engine's run folder on the host: the record lists the failed starts kept in its `attempts/`.
   * Read at create only, so it is in neither diff list: a moved folder alone re-captures nothing.
   */
  runDir: z.string().optional(),
});
export type CacheCaptureInputs = z.infer<typeof fields>;

/** A container's log is read by its container id, a file log belongs to a process. */
const logMatchesProcess = across((news, refuse) => {
  const kind = fieldsOf(news.engineLog).kind;
  const id = fieldsOf(news.processIdentity);
  if (hasUnknown(news.engineLog) || hasUnknown(news.processIdentity)) return;
  if (kind === "container" && id.containerId === undefined) refuse("engineLog", "engineLog is a container's log, but processIdentity names no container");
  if (kind === "files" && id.containerId !== undefined) refuse("engineLog", "engineLog names files, but processIdentity names a container: read its log with kind \"container\"");
});

/** The inputs as the check judges them, in the order their refusals are reported; the others are typed only. */
export const captureInputs = inOrder(
  fields.pick({ processIdentity: true, expected: true, login: true, engineLog: true, modelDir: true, probeTimeoutS: true }),
  logMatchesProcess,
);

export const MEASURED_AGAINST = ["engineId", "url", "generationDigest", "planSha256", "processIdentity", "expected"] as const;
export const UPDATABLE = ["apiKey", "hostAlias", "probeTimeoutS", "stack", "login", "privateKey", "password", "engineLog", "modelDir"] as const;

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
