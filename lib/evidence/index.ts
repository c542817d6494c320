/** The evidence store (design.md §5): immutable, content-addressed measurement records and their export. */
export { EvidenceError, type EvidenceErrorCode } from "./errors";
export {
  DIGEST_PATTERN,
  EVIDENCE_KINDS,
  EvidenceRecordSchema,
  KIND_PATTERN,
  REVISION_PATTERN,
  evidenceRecord,
  parseEvidenceRecord,
  type EvidenceArtifact,
  type EvidenceCommand,
  type EvidenceHttp,
  type EvidenceKind,
  type EvidenceRecord,
  type EvidenceRecordFields,
  type EvidenceSubject,
  type EvidenceVerdict,
} from "./record";
export { EvidenceStore, evidenceRoot, type EvidenceStoreOptions, type ListedRecord, type VerifyResult, type WrittenRecord } from "./store";
export { SecretRegistry, type SecretEncoding } from "./secrets";
export { REDACTED, Sanitiser, exportSanitised, type ExportAliases } from "./sanitise";
export { sourceRevision, treeRevision } from "./revision";
export { HttpJournal, currentHttpJournal, exitStatusOf, noteHttp, withHttpJournal, type HttpCapture, type HttpExchange } from "./http-journal";
export { GATES, gateOfKind, type GateId, type GateInfo } from "./gates";
export {
  DEPLOYMENT_RECORD_KIND,
  deploymentRecord,
  deploymentRecordEvidence,
  gateLines,
  type DeploymentRecord,
  type EngineHosts,
  type GateEntry,
  type GateStatus,
  type GateStep,
  type StartingState,
  type StepCommand,
  type StepRevisions,
  NARWHAL_KINDS,
  type StoredRecord,
} from "./deployment-record";
export { LOAD_TRIAL_KIND, trialStep, type TrialStepSummary } from "./trial-step";
export { exportDeploymentRecord, storedRecords, type ExportOptions, type ExportResult } from "./export";
export { exportAliases, splitStackConfig, type AliasSources, type DiscoveredHost } from "./export-aliases";
