/**
 * Keeps one image check run, passed or failed: its line in the engine's append-only check log first
 * (so the output survives whatever follows), then the engine's launch.json and the line itself as
 * artifacts, and the immutable image-check record that names them.
 */
import { evidenceBackend } from "../../lib/evidence/stack-store";
import { providerEvidence } from "../../lib/evidence/provider-evidence";
import { appendLogLine, type AppendedLine } from "../../lib/evidence/append-log";
import { checkDigest } from "../../lib/image-check/verdict";
import { checkLogLine, checkLogName, type CheckLogStep } from "../../lib/image-check/log";
import { launchJsonText } from "../../lib/image-check/launch-json";
import type { CheckOutcome } from "../../lib/image-check/run";
import { MEASURED_AGAINST, type ImageCheckInputs } from "./schema";

const KIND = "image-check";

export interface CheckRun extends CheckOutcome {
  checkId: string;
  startedAt: string;
  endedAt: string;
  steps: CheckLogStep[];
}

export interface RecordedCheck {
  /** Null when the check did not get as far as an identity and findings. */
  checkDigest: string | null;
  checkedAt: string;
  evidence: { relativePath: string; digest: string };
  launchJson: { relativePath: string; sha256: string };
  log: AppendedLine;
}

/** JSON values only: absent optional fields dropped, as the record schema requires. */
const plain = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

export async function recordCheck(inputs: ImageCheckInputs, run: CheckRun): Promise<RecordedCheck> {
  const secrets = [inputs.privateKey, inputs.password];
  const status = run.failures.length === 0 ? "pass" : "fail";
  const line = checkLogLine({
    checkId: run.checkId,
    engineId: inputs.engineId,
    hostAlias: inputs.hostAlias,
    planSha256: inputs.plan.planSha256,
    runtime: inputs.runtime.kind,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    steps: run.steps,
    verdict: { status, failures: run.failures },
  });
  const log = await appendLogLine(evidenceBackend(inputs.stack), KIND, checkLogName(inputs.engineId), line, { secrets });
  const store = providerEvidence(inputs.stack, secrets);
  const launchJson = await store.artifact(KIND, "launch.json", launchJsonText(inputs.plan));
  const output = await store.artifact(KIND, `${log.relativePath}@${log.offset}`, line);
  const digest = run.identity && run.findings ? checkDigest(inputs.plan.planSha256, run.identity, run.findings) : null;
  const record = await store.record({
    kind: KIND,
    subject: { kind: "engine", alias: inputs.engineId },
    inputs: plain({ ...Object.fromEntries(MEASURED_AGAINST.map((k) => [k, inputs[k]])), hostAlias: inputs.hostAlias, launchJson: launchJson.sha256 }),
    commands: run.steps.map((s) => ({ argv: [...s.argv], host: inputs.hostAlias, exitStatus: s.exitStatus, startedAt: s.startedAt, endedAt: s.endedAt })),
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    observations: plain({ checkId: run.checkId, checkDigest: digest, identity: run.identity, findings: run.findings, log }) as never,
    verdict: { status, reasons: run.failures.map((f) => f.message) },
    artifacts: [launchJson, output],
  });
  return {
    checkDigest: digest,
    checkedAt: run.endedAt,
    evidence: { relativePath: record.relativePath, digest: record.digest },
    launchJson: { relativePath: launchJson.relativePath, sha256: launchJson.sha256 },
    log,
  };
}
