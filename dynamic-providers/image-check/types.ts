import type { LaunchRecord } from "../../lib/launch/plan";
import type { CheckRuntime, RuntimeFindings } from "../../lib/image-check";
import type { StoredLogin } from "../../lib/ssh/stored-login";

/** What the check is measured against, and how to reach the host (plain: these exist only inside provider calls). */
export interface ImageCheckInputs {
  engineId: string;
  hostAlias: string;
  /** Names the evidence folder (runs/<stack>/evidence). */
  stack: string;
  /** How to log in to the engine's host, pinned to the key discovery verified (stored without aliases: `hostAlias` names the host). */
  login: StoredLogin;
  /** Secret. */
  privateKey?: string;
  /** Secret. */
  password?: string;
  /** The rendered launch plan: recorded as the engine's launch.json. */
  plan: LaunchRecord;
  /** The plan's hash: a new plan needs a new check (replace key). */
  planSha256: string;
  runtime: CheckRuntime;
  /** Checkpoint directory on the host. */
  modelDir: string;
  /** Package -> version the runtime must have; vllm is discovery's version. */
  pins: Record<string, string>;
  /** The model needs VLLM_SSM_CONV_STATE_LAYOUT=DS. */
  dsRequired: boolean;
  /**
   * The digest of the runtime check's own code (RUNTIME_CHECK_SHA256): findings are what that code read,
   * so a check by other code (one that reads more, such as the NIXL versions) is other evidence.
   */
  checkScriptSha256?: string;
  deadlines: { inspectS: number; checkS: number };
}

/** Who the runtime is: the native command as resolved, or the image as the daemon resolved it. */
export type CheckedIdentity =
  | { kind: "native"; command: string; path: string; sha256: string | null; interpreter: string; interpreterSource: string; cliVersion: string }
  | { kind: "docker"; image: string; imageId: string; resolvedDigest: string | null };

export interface ImageCheckResult {
  /** Unique per check run; the check log and the record carry it. */
  checkId: string;
  /** sha256 over plan hash, identity and findings: equal for a repeated check of the same runtime and plan. */
  checkDigest: string;
  /** vllm.version.__version__: what the live engine's /version must report. */
  vllmApiVersion: string;
  identity: CheckedIdentity;
  findings: RuntimeFindings;
  checkedAt: string;
  /** The immutable image-check record. */
  evidence: { relativePath: string; digest: string };
  /** The engine's launch.json, an artifact of that record. */
  launchJson: { relativePath: string; sha256: string };
  /** Where this run's line starts in the engine's append-only check log. */
  log: { relativePath: string; offset: number; sha256: string };
}

export type ImageCheckOutputs = ImageCheckInputs & ImageCheckResult;
