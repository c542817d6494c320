export { summarise, type InvalidationSummary, type InvalidatedEvidence, type EvidenceRef, type InputChange, type GateGroup } from "./summary";
export { formatSummary } from "./format";
export { type Gate, GATE_TITLES } from "./kinds";
export type { PreviewEvent, StepMetadata, StepState } from "./events";
