/**
 * ImageCheck provider methods (Gate C, "Validate the image and plan"), loaded at call time by
 * resource.ts (see ../shim.ts).
 *
 * - check:  per-property problems of the inputs (values unknown during preview are let through);
 * - create: one SSH login: the runtime's identity (native command and its Python, or the image as the
 *           daemon resolves it), then the runtime check (lib/image-check/python.ts) in that runtime.
 *           Every run, passed or failed, appends one line (its id, plan hash, each step's output) to the
 *           engine's check log and writes an immutable image-check record with the engine's launch.json
 *           as an artifact. A failure then rejects, naming each failed check, and nothing enters state;
 * - diff:   replaces when the plan hash or anything else the check was measured against changes;
 *           the login, secrets, deadlines or stack alone update in place;
 * - read:   none: the check stays valid exactly as long as its inputs.
 * - delete: nothing remote; the log and records stay.
 */
import { randomBytes } from "node:crypto";
import type * as pulumi from "@pulumi/pulumi";
import { withSsh, type SshSession } from "../../lib/ssh/client";
import { OPERATE, sshTarget } from "../../lib/ssh/login";
import { readLogin } from "../../lib/ssh/stored-login";
import { withHostKeyOf } from "../../lib/ssh/host-key";
import { ImageCheckError, runImageCheck, type CheckFailure, type CheckLogStep, type CheckOutcome, type CheckStep, type StepResult } from "../../lib/image-check";
import { evidenceProvider, schemaFailures } from "../evidence-provider";
import { recordCheck } from "./record";
import { imageCheckInputs, MEASURED_AGAINST, specOf, UPDATABLE, type ImageCheckInputs, type ImageCheckOutputs } from "./schema";

/** Runs one step and logs it; a transport failure or timeout becomes a result with no exit status. */
async function runStep(ssh: SshSession, step: CheckStep, log: CheckLogStep[]): Promise<StepResult> {
  const startedAt = new Date().toISOString();
  let result: StepResult;
  try {
    const r = await ssh.exec(step.command, { stdin: step.stdin, timeoutS: step.timeoutS, name: step.name });
    result = { exitStatus: r.code >= 0 && r.code <= 255 ? r.code : null, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    result = { exitStatus: null, stdout: "", stderr: (err as Error).message };
  }
  const script = step.scriptSha256 ? { scriptSha256: step.scriptSha256 } : {};
  log.push({ name: step.name, argv: [...step.logArgv], ...script, exitStatus: result.exitStatus, startedAt, endedAt: new Date().toISOString(), stdout: result.stdout, stderr: result.stderr });
  return result;
}

/** Every refusal of the inputs, each naming its property; create refuses through it too. */
export const imageCheckInputFailures = (news: ImageCheckInputs): pulumi.dynamic.CheckFailure[] => schemaFailures(imageCheckInputs, news);

/** The failures as one message: each check that failed, then where the output is kept. */
function failureMessage(failures: ReadonlyArray<CheckFailure>, logPath: string, offset: number, record: string): string {
  const kinds = [...new Set(failures.map((f) => f.kind))].join(", ");
  return (
    `image check failed (${kinds}):\n` +
    failures.map((f) => `  - ${f.message}`).join("\n") +
    `\nThe check's output is in the evidence store: ${logPath} (line at byte ${offset}) and record ${record}.`
  );
}

async function checkAndRecord(inputs: ImageCheckInputs): Promise<ImageCheckOutputs> {
  const problems = imageCheckInputFailures(inputs);
  if (problems.length > 0) {
    throw new ImageCheckError("NARWHAL_IMAGE_CHECK_INPUT", `image check of engine ${inputs.engineId} on host ${inputs.hostAlias}: ${problems.map((p) => p.reason).join("; ")}`);
  }
  const spec = specOf(inputs);
  const where = `image check of engine ${spec.engineId} on host ${spec.hostAlias}`;
  const checkId = randomBytes(16).toString("hex");
  const startedAt = new Date().toISOString();
  const steps: CheckLogStep[] = [];
  let outcome: CheckOutcome;
  try {
    const target = sshTarget(readLogin(inputs.login, { alias: inputs.hostAlias, privateKey: inputs.privateKey, password: inputs.password }), OPERATE);
    outcome = await withSsh(target, (ssh) => runImageCheck((step) => runStep(ssh, step, steps), spec, checkId));
  } catch (err) {
    outcome = { identity: null, findings: null, failures: [{ kind: "login", message: `${where}: ${(err as Error).message}` }] };
  }
  if (outcome.failures.length === 0 && (!outcome.identity || !outcome.findings?.vllmApiVersion)) {
    outcome.failures.push({ kind: "runtime", message: `${where}: the check ended without an identity or vllm_api_version` });
  }
  const recorded = await recordCheck(inputs, { checkId, startedAt, endedAt: new Date().toISOString(), steps, ...outcome });
  if (outcome.failures.length > 0) throw new ImageCheckError("NARWHAL_IMAGE_CHECK_FAILED", failureMessage(outcome.failures, recorded.log.relativePath, recorded.log.offset, recorded.evidence.relativePath));
  return {
    ...inputs,
    ...recorded,
    checkId,
    // A passing check has all of these (checked above).
    checkDigest: recorded.checkDigest!,
    vllmApiVersion: outcome.findings!.vllmApiVersion!,
    identity: outcome.identity!,
    findings: outcome.findings!,
  };
}

// An update changes only how the host is reached (or where evidence goes): the check stands.
export const provider: pulumi.dynamic.ResourceProvider = evidenceProvider<ImageCheckInputs, ImageCheckOutputs>({
  measuredAgainst: MEASURED_AGAINST,
  updatable: UPDATABLE,
  inputs: imageCheckInputs,
  // A re-pinned host key alone changes nothing here (lib/ssh/host-key.ts, withHostKeyOf).
  compared: (olds, news) => ({ olds, news: { ...news, login: withHostKeyOf(news.login, olds.login) } }),
  async create(inputs) {
    const outs = await checkAndRecord(inputs);
    return { id: `${inputs.engineId}-${outs.checkId.slice(0, 12)}`, outs };
  },
});
