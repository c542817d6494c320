/** Gate C's image check: runtime identity, pinned packages, connector, DS layout, tokenizer, vllm_api_version. */
export { ImageCheckError, type ImageCheckErrorCode } from "./errors";
export { RUNTIME_CHECK_PY, CHECK_LINE_PREFIX, type RuntimeCheckRequest } from "./python";
export { NATIVE_IDENTITY_SH, parseNativeIdentity, type NativeIdentity } from "./native-identity";
export {
  flagValue,
  imageCheckProblems,
  type SpecProblem,
  runtimeCheckRequest,
  type CheckRuntime,
  type DockerCheckSpec,
  type ImageCheckSpec,
  type NativeCheckSpec,
  type PreparedRequest,
} from "./request";
export * from "./commands";
export * from "./verdict";
export { checkLogLine, checkLogName, parseCheckLog, type CheckLogEntry, type CheckLogStep } from "./log";
export { launchJsonText } from "./launch-json";
export { runImageCheck, type CheckedIdentity, type CheckOutcome, type StepRunner } from "./run";
