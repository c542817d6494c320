export * from "./errors";
export * from "./canonical";
export * from "./contract";
export * from "./document";
export * from "./verify";
export * from "./sidecar";
export * from "./runbook-document";
export * from "./sidecar-answer";
