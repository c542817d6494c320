/**
 * One image check, step by step: the identity step, then the runtime check. Each step runs through the
 * caller's `run` (the provider's SSH login, which keeps each step's command and output for the check log
 * whatever happens). Returns failures rather than throwing, so the caller can log and record a failed
 * check before it reports it.
 */
import { parseImageInspect, checkImageIdentity } from "../discovery/runtime";
import {
  checkContainerName,
  dockerCheckStep,
  dockerInspectStep,
  dockerRemoveStep,
  type CheckStep,
  nativeCheckStep,
  nativeIdentityStep,
} from "./commands";
import { runtimeCheckRequest, type DockerCheckSpec, type ImageCheckSpec, type NativeCheckSpec } from "./request";
import { exitWords, imageIdentityFailures, judgeNativeIdentity, judgeRuntimeCheck, type CheckFailure, type RuntimeFindings, type StepResult } from "./verdict";
import { parseNativeIdentity } from "./native-identity";

/** Who the runtime is: the native command as resolved, or the image as the daemon resolved it. */
export type CheckedIdentity =
  | { kind: "native"; command: string; path: string; sha256: string | null; interpreter: string; interpreterSource: string; cliVersion: string }
  | { kind: "docker"; image: string; imageId: string; resolvedDigest: string | null };

export interface CheckOutcome {
  identity: CheckedIdentity | null;
  findings: RuntimeFindings | null;
  failures: CheckFailure[];
}

/** Runs one step on the engine's host; a transport failure or timeout is a result with no exit status. */
export type StepRunner = (step: CheckStep) => Promise<StepResult>;

const whereOf = (spec: ImageCheckSpec) => `image check of engine ${spec.engineId} on host ${spec.hostAlias}`;

async function checkNative(run: StepRunner, spec: NativeCheckSpec): Promise<CheckOutcome> {
  const where = whereOf(spec);
  const step = nativeIdentityStep(spec);
  const read = await run(step);
  if (read.exitStatus !== 0) {
    return { identity: null, findings: null, failures: [{ kind: "identity", message: `${where}: reading the runtime identity ${exitWords(read.exitStatus)}: ${read.stderr.trim() || "no error output"}` }] };
  }
  const identity = parseNativeIdentity(read.stdout, spec.runtime.vllmCommand);
  let findings: RuntimeFindings | null = null;
  const failures: CheckFailure[] = [];
  if (identity.interpreter && identity.path) {
    const prepared = runtimeCheckRequest(spec);
    const checked = await run(nativeCheckStep(spec, prepared, identity.interpreter));
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

async function checkDocker(run: StepRunner, spec: DockerCheckSpec, checkId: string): Promise<CheckOutcome> {
  const where = whereOf(spec);
  const inspected = await run(dockerInspectStep(spec));
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
  const checked = await run(dockerCheckStep(spec, prepared, image.imageId, name));
  // After a timeout the container may still run: remove it so the check leaves nothing behind.
  if (checked.exitStatus === 124 || checked.exitStatus === null) await run(dockerRemoveStep(spec, name));
  const judged = judgeRuntimeCheck(where, prepared.request, checked, `a container of ${image.imageId}`);
  return {
    identity: { kind: "docker", image: spec.runtime.image, imageId: image.imageId, resolvedDigest: identity.resolvedDigest },
    findings: judged.findings,
    failures: judged.failures,
  };
}

/** Runs the check of a validated spec, each step through `run`. */
export function runImageCheck(run: StepRunner, spec: ImageCheckSpec, checkId: string): Promise<CheckOutcome> {
  return spec.runtime.kind === "native" ? checkNative(run, spec as NativeCheckSpec) : checkDocker(run, spec as DockerCheckSpec, checkId);
}
