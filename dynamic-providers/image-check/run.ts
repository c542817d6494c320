/**
 * One image check over one SSH login: the identity step, then the runtime check, each step's command
 * and output kept for the check log whatever happens. Returns failures rather than throwing, so the
 * caller can log and record a failed check before it reports it.
 */
import { SshSession } from "../../lib/ssh/client";
import { parseImageInspect, checkImageIdentity } from "../../lib/discovery/runtime";
import {
  checkContainerName,
  dockerCheckStep,
  dockerInspectStep,
  dockerRemoveStep,
  exitWords,
  imageIdentityFailures,
  judgeNativeIdentity,
  judgeRuntimeCheck,
  nativeCheckStep,
  nativeIdentityStep,
  parseNativeIdentity,
  runtimeCheckRequest,
  type CheckFailure,
  type CheckLogStep,
  type CheckStep,
  type DockerCheckSpec,
  type ImageCheckSpec,
  type NativeCheckSpec,
  type RuntimeFindings,
  type StepResult,
} from "../../lib/image-check";
import type { CheckedIdentity } from "./types";

export interface CheckOutcome {
  identity: CheckedIdentity | null;
  findings: RuntimeFindings | null;
  failures: CheckFailure[];
}

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
  log.push({
    name: step.name,
    argv: [...step.logArgv],
    ...(step.scriptSha256 ? { scriptSha256: step.scriptSha256 } : {}),
    exitStatus: result.exitStatus,
    startedAt,
    endedAt: new Date().toISOString(),
    stdout: result.stdout,
    stderr: result.stderr,
  });
  return result;
}

const whereOf = (spec: ImageCheckSpec) => `image check of engine ${spec.engineId} on host ${spec.hostAlias}`;

async function checkNative(ssh: SshSession, spec: NativeCheckSpec, log: CheckLogStep[]): Promise<CheckOutcome> {
  const where = whereOf(spec);
  const step = nativeIdentityStep(spec);
  const read = await runStep(ssh, step, log);
  if (read.exitStatus !== 0) {
    return { identity: null, findings: null, failures: [{ kind: "identity", message: `${where}: reading the runtime identity ${exitWords(read.exitStatus)}: ${read.stderr.trim() || "no error output"}` }] };
  }
  const identity = parseNativeIdentity(read.stdout, spec.runtime.vllmCommand);
  let findings: RuntimeFindings | null = null;
  const failures: CheckFailure[] = [];
  if (identity.interpreter && identity.path) {
    const prepared = runtimeCheckRequest(spec);
    const checked = await runStep(ssh, nativeCheckStep(spec, prepared, identity.interpreter), log);
    const judged = judgeRuntimeCheck(where, prepared.request, checked, identity.interpreter);
    findings = judged.findings;
    failures.push(...judged.failures);
  }
  const judgedIdentity = judgeNativeIdentity(where, identity, spec.pins.vllm, findings?.vllmApiVersion ?? null);
  failures.unshift(...judgedIdentity.failures);
  const checkedIdentity: CheckedIdentity | null =
    identity.path && identity.interpreter && judgedIdentity.cliVersion
      ? {
          kind: "native",
          command: identity.command,
          path: identity.path,
          sha256: identity.sha256,
          interpreter: identity.interpreter,
          interpreterSource: identity.interpreterSource,
          cliVersion: judgedIdentity.cliVersion,
        }
      : null;
  return { identity: checkedIdentity, findings, failures };
}

async function checkDocker(ssh: SshSession, spec: DockerCheckSpec, log: CheckLogStep[], checkId: string): Promise<CheckOutcome> {
  const where = whereOf(spec);
  const inspected = await runStep(ssh, dockerInspectStep(spec), log);
  if (inspected.exitStatus !== 0) {
    const missing = /no such image/i.test(inspected.stderr);
    return {
      identity: null,
      findings: null,
      failures: [
        {
          kind: "identity",
          message: missing
            ? `${where}: runtime.image ${spec.runtime.image} is not on the host; load or pull the pinned image before the check`
            : `${where}: docker image inspect ${spec.runtime.image} ${exitWords(inspected.exitStatus)}: ${inspected.stderr.trim() || "no error output"}`,
        },
      ],
    };
  }
  let image;
  try {
    image = parseImageInspect(inspected.stdout);
  } catch (err) {
    return { identity: null, findings: null, failures: [{ kind: "identity", message: `${where}: ${(err as Error).message}` }] };
  }
  const identity = checkImageIdentity(spec.runtime.image, image, spec.hostAlias);
  // A check of an image other than the pinned one would certify nothing: stop at the identity.
  if (!identity.ok) return { identity: null, findings: null, failures: imageIdentityFailures(where, identity) };
  const prepared = runtimeCheckRequest(spec);
  const name = checkContainerName(spec.engineId, checkId);
  const checked = await runStep(ssh, dockerCheckStep(spec, prepared, image.imageId, name), log);
  // After a timeout the container may still run: remove it so the check leaves nothing behind.
  if (checked.exitStatus === 124 || checked.exitStatus === null) await runStep(ssh, dockerRemoveStep(spec, name), log);
  const judged = judgeRuntimeCheck(where, prepared.request, checked, `a container of ${image.imageId}`);
  return {
    identity: { kind: "docker", image: spec.runtime.image, imageId: image.imageId, resolvedDigest: identity.resolvedDigest },
    findings: judged.findings,
    failures: judged.failures,
  };
}

/** Runs the check of a validated spec over an open session. */
export function runImageCheck(ssh: SshSession, spec: ImageCheckSpec, log: CheckLogStep[], checkId: string): Promise<CheckOutcome> {
  return spec.runtime.kind === "native" ? checkNative(ssh, spec as NativeCheckSpec, log) : checkDocker(ssh, spec as DockerCheckSpec, log, checkId);
}
