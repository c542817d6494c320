/** One `@pulumi/command` step as it ran on the host: the script's text and what it printed. */
export interface RecordedStep {
  name: string;
  script: string;
  stdout: string;
}

export interface CommandRecordInputs {
  stack: string;
  /** The record kind: `install` (Gate B) or `router` (Gate G). */
  kind: "install" | "router";
  /** The host the steps ran on. */
  hostAlias: string;
  steps: RecordedStep[];
  /** What the steps established (the install marker, the router's start and proof). */
  observations: Record<string, unknown>;
  /**
   * For steps whose commands only run again while their triggers stand, and then print what they printed
   * before (the install adopts its venv): the digest of those triggers (components/runtime/start-key.ts).
   * While it stands, a preview holds `steps` and `observations`.
   */
  startKey?: string;
}

export interface CommandRecordOutputs extends CommandRecordInputs {
  recordedAt: string;
  evidence: { relativePath: string; digest: string };
}
