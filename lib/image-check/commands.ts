/**
 * The command lines the image check runs over SSH, built from a validated spec. Every value goes
 * through `shq`; every step has a deadline, enforced on the host by timeout(1) when it has one (exit
 * 124) and by the SSH session a little later in any case.
 */
import { createHash } from "node:crypto";
import { shellLine } from "../shell";
import { CONTAINER_MODEL_DIR, CONTAINER_TOKENIZER_DIR } from "../runtime/container-spec";
import { NATIVE_IDENTITY_SH } from "./native-identity";
import { RUNTIME_CHECK_PY } from "./python";
import type { DockerCheckSpec, ImageCheckSpec, NativeCheckSpec, PreparedRequest } from "./request";

/** Seconds the SSH session waits beyond a step's own deadline, so timeout(1) reports first. */
export const SSH_GRACE_S = 15;

export const RUNTIME_CHECK_SHA256 = `sha256:${createHash("sha256").update(RUNTIME_CHECK_PY).digest("hex")}`;
export const NATIVE_IDENTITY_SHA256 = `sha256:${createHash("sha256").update(NATIVE_IDENTITY_SH).digest("hex")}`;

/** One remote step: what runs, what it is called in errors and the log, and how the log shows it. */
export interface CheckStep {
  /** Named in errors and in the check log. */
  readonly name: string;
  readonly command: string;
  readonly stdin?: string;
  /** SSH-side deadline (the step's own deadline plus SSH_GRACE_S). */
  readonly timeoutS: number;
  /** The argv as the log records it: the check script replaced by its digest. */
  readonly logArgv: ReadonlyArray<string>;
  /** The digest of the script the step runs, when it runs one. */
  readonly scriptSha256?: string;
}

/** `argv` under timeout(1) when the host has it, else as is (the SSH deadline still holds). */
function bounded(seconds: number, argv: ReadonlyArray<string>): string {
  return shellLine(["sh", "-c", 'if command -v timeout >/dev/null 2>&1; then exec timeout "$@"; else shift; exec "$@"; fi', "sh", String(seconds), ...argv]);
}

const scriptPlaceholder = `<runtime-check.py ${RUNTIME_CHECK_SHA256}>`;
const forLog = (argv: ReadonlyArray<string>) => argv.map((a) => (a === RUNTIME_CHECK_PY ? scriptPlaceholder : a));

/** Native: where the vllm command resolves, its digest, its interpreter and its `--version`. */
export function nativeIdentityStep(spec: NativeCheckSpec): CheckStep {
  const argv = ["sh", "-s", "--", spec.runtime.vllmCommand, String(spec.deadlines.inspectS)];
  return {
    name: "runtime identity",
    command: shellLine(argv),
    stdin: NATIVE_IDENTITY_SH,
    timeoutS: spec.deadlines.inspectS + SSH_GRACE_S,
    logArgv: argv,
    scriptSha256: NATIVE_IDENTITY_SHA256,
  };
}

/** Native: the runtime check under the runtime's own Python, with the plan's environment. */
export function nativeCheckStep(spec: ImageCheckSpec, prepared: PreparedRequest, interpreter: string): CheckStep {
  return runtimeCheckStep(spec, ["env", ...Object.entries(spec.plan.env).map(([k, v]) => `${k}=${v}`), interpreter, "-c", RUNTIME_CHECK_PY, JSON.stringify(prepared.request)]);
}

/** The runtime check as one bounded step, whichever runtime's argv runs it. */
function runtimeCheckStep(spec: Pick<ImageCheckSpec, "deadlines">, argv: string[]): CheckStep {
  return {
    name: "runtime check",
    command: bounded(spec.deadlines.checkS, argv),
    timeoutS: spec.deadlines.checkS + SSH_GRACE_S,
    logArgv: forLog(argv),
    scriptSha256: RUNTIME_CHECK_SHA256,
  };
}

/** Docker: the configured image as the daemon resolves it (ID, RepoDigests). */
export function dockerInspectStep(spec: DockerCheckSpec): CheckStep {
  const argv = [spec.runtime.dockerCommand, "image", "inspect", "--format", "{{json .}}", "--", spec.runtime.image];
  return { name: "image inspect", command: bounded(spec.deadlines.inspectS, argv), timeoutS: spec.deadlines.inspectS + SSH_GRACE_S, logArgv: argv };
}

/**
 * Docker: the runtime check in a short-lived container of exactly the inspected image ID, with the
 * checkpoint (and a separate tokenizer) mounted read-only as the engine's container sees them, the
 * plan's environment, no network, and no pull. It exits after the check; `--rm` removes it.
 */
export function dockerCheckStep(spec: DockerCheckSpec, prepared: PreparedRequest, imageId: string, containerName: string): CheckStep {
  return runtimeCheckStep(spec, [
    spec.runtime.dockerCommand, "run", "--rm", "--pull", "never", "--network", "none", "--name", containerName,
    "-v", `${spec.modelDir}:${CONTAINER_MODEL_DIR}:ro`,
    ...(prepared.tokenizerMount ? ["-v", `${prepared.tokenizerMount}:${CONTAINER_TOKENIZER_DIR}:ro`] : []),
    ...Object.entries(spec.plan.env).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
    "--entrypoint", "python3", imageId, "-c", RUNTIME_CHECK_PY, JSON.stringify(prepared.request),
  ]);
}

/** Docker: removes the check container after a timeout, so nothing it started outlives the check. */
export function dockerRemoveStep(spec: DockerCheckSpec, containerName: string): CheckStep {
  const argv = [spec.runtime.dockerCommand, "rm", "-f", "-v", containerName];
  return { name: "check container removal", command: bounded(spec.deadlines.inspectS, argv), timeoutS: spec.deadlines.inspectS + SSH_GRACE_S, logArgv: argv };
}

/** `narwhal-check-<engine>-<first 12 hex of the check id>`: unique per check, a valid docker name. */
export function checkContainerName(engineId: string, checkId: string): string {
  return `narwhal-check-${engineId}-${checkId.slice(0, 12)}`;
}
