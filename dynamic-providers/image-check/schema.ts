/** ImageCheck's inputs as one zod schema (where evidence goes, how to log in, the spec the check runs: lib/image-check), the types it produces, and the outputs. */
import { z } from "zod";
import { imageCheckProblems, type CheckRuntime, type ImageCheckSpec } from "../../lib/image-check/request";
import { RUNTIME_CHECK_SHA256 } from "../../lib/image-check/commands";
import type { CheckedIdentity } from "../../lib/image-check/run";
import type { RuntimeFindings } from "../../lib/image-check/verdict";
import type { LaunchRecord } from "../../lib/launch/plan";
import type { StoredLogin } from "../../lib/ssh/stored-login";
import { isStackFolderName } from "../../lib/stack-name";
import { hasUnknown } from "../../lib/unknown";
import { across, hostLogin, inOrder } from "../../lib/input-rules";

/** A stored login to the engine's host, pinned to the key discovery verified (stored without aliases: `hostAlias` names the host). */
export const storedLogin = () => hostLogin().transform((l) => l as unknown as StoredLogin);

const notAFolder = (iss: { input?: unknown }) => `stack ${JSON.stringify(iss.input)} cannot name an evidence folder`;

/** What the check is measured against, and how to reach the host (plain: these exist only inside provider calls). */
const fields = z.object({
  engineId: z.string(),
  hostAlias: z.string(),
  /** Names the evidence folder (runs/<stack>/evidence). */
  stack: z.string({ error: notAFolder }).refine(isStackFolderName, { error: notAFolder }),
  login: storedLogin(),
  /** Secret. */
  privateKey: z.string().optional(),
  /** Secret. */
  password: z.string().optional(),
  /** The rendered launch plan: recorded as the engine's launch.json. */
  plan: z.custom<LaunchRecord>(),
  /** The plan's hash: a new plan needs a new check (replace key). */
  planSha256: z.string(),
  runtime: z.custom<CheckRuntime>(),
  /** Checkpoint directory on the host. */
  modelDir: z.string(),
  /** Package -> version the runtime must have; vllm is discovery's version. */
  pins: z.record(z.string(), z.string()),
  /** The model needs VLLM_SSM_CONV_STATE_LAYOUT=DS. */
  dsRequired: z.boolean(),
  /**
   * The digest of the runtime check's own code (RUNTIME_CHECK_SHA256): findings are what that code read,
   * so a check by other code (one that reads more, such as the NIXL versions) is other evidence.
   */
  checkScriptSha256: z.string().optional(),
  deadlines: z.object({ inspectS: z.number(), checkS: z.number() }),
});
export type ImageCheckInputs = z.infer<typeof fields>;

export function specOf(i: ImageCheckInputs): ImageCheckSpec {
  return { engineId: i.engineId, hostAlias: i.hostAlias, plan: i.plan, runtime: i.runtime, modelDir: i.modelDir, pins: i.pins, dsRequired: i.dsRequired, deadlines: i.deadlines };
}

/** The plan hash is the plan's own, and the spec's own rules (lib/image-check) hold once every value they need is known. */
const againstPlan = across((news, refuse) => {
  const plan = news.plan as LaunchRecord | undefined;
  if (!hasUnknown(plan) && plan?.planSha256 !== news.planSha256) refuse("planSha256", `planSha256 ${JSON.stringify(news.planSha256)} is not the plan's own hash ${JSON.stringify(plan?.planSha256)}`);
  const script = news.checkScriptSha256;
  if (script !== undefined && !hasUnknown(script) && script !== RUNTIME_CHECK_SHA256) {
    refuse("checkScriptSha256", `checkScriptSha256 ${JSON.stringify(script)} is not the runtime check this provider runs (${RUNTIME_CHECK_SHA256})`);
  }
  const spec = specOf(news as unknown as ImageCheckInputs);
  if (!hasUnknown(spec)) for (const p of imageCheckProblems(spec)) refuse(p.property, p.reason);
});

/** ImageCheckInputs, in the order their refusals are reported; the other keys are typed only, judged by the spec's rules. */
export const imageCheckInputs = inOrder(fields.pick({ stack: true, login: true }), againstPlan);

/** Inputs the check was measured against: a change means it no longer describes this engine's runtime. */
export const MEASURED_AGAINST = ["engineId", "planSha256", "runtime", "modelDir", "pins", "dsRequired", "checkScriptSha256"] as const;
/** Inputs that only change how the host is reached, where evidence goes, or the (same-hash) plan object. */
export const UPDATABLE = ["hostAlias", "stack", "login", "privateKey", "password", "deadlines", "plan"] as const;

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
