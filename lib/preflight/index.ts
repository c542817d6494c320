/** Gate F's preflight (narwhal-check) and first-token calibration as pure logic. */
export * from "./types";
export * from "./pairs";
export * from "./schedule";
export * from "./judge";
export * from "./transfer";
export * from "./calibration";
export * from "./calibration-run";
export * from "./calibration-adopt";
export * from "./narwhal-report";
export * from "./run";
export * from "./attestation";
export * from "./status";
export * from "./declared-contract";
export * from "./restart-risk";
export * from "./document-plan";
export * from "./outcome";
export * from "./calibration-outcome";
