/**
 * Gate C's recovery rules for an engine that fails at startup: the failures that mean discovery's view
 * of the checkpoint is out of date, matched in the engine log, each with what to do. The start scripts
 * print the hint beside the log tail, so the `pulumi up` error carries it.
 */
import { shq } from "../shell";

export const RECOVERY_RULES: ReadonlyArray<{ readonly pattern: string; readonly hint: string }> = [
  {
    pattern: "trust_remote_code",
    hint:
      "the checkpoint needs custom code (auto_map) that discovery did not record: re-run discovery " +
      "(pulumi up --refresh) so --trust-remote-code is added, or set model.trustRemoteCode",
  },
  {
    pattern: "VLLM_SSM_CONV_STATE_LAYOUT",
    hint:
      "the checkpoint carries convolutional SSM state that discovery did not record: re-run discovery " +
      "(pulumi up --refresh) so VLLM_SSM_CONV_STATE_LAYOUT=DS is set",
  },
];

/** Shell lines that print each matching rule's hint for the log at `$run/engine.log`. */
export function recoveryHintScript(): string {
  return RECOVERY_RULES.map(
    (r) => `grep -q ${shq(r.pattern)} "$run/engine.log" 2>/dev/null && echo ${shq(`hint: ${r.hint}`)} >&2`,
  ).join("\n");
}
